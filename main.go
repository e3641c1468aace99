// Command drover is Drover's single binary: agent (server and/or client)
// and the CLI that talks to it.
package main

import (
	"os"

	"github.com/droverhq/drover/command"
)

func main() { os.Exit(command.Main(os.Args)) }
