// Command drover is Drover's single binary: agent (server and/or client)
// and the CLI that talks to it.
package main

func main() {}
