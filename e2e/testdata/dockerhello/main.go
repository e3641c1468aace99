// Command dockerhello is the workload of the e2e docker tests, built
// static and put in a FROM scratch image (and run as is by raw_exec
// tests). It prints its arguments as one line, then runs until SIGTERM
// or SIGINT (exit 0); each SIGUSR1 prints "usr1-N", N counting from 1,
// so a test can produce output at a moment of its choosing. With
// HELLO_HTTP set to an address ("127.0.0.1:8080", ":8080") it also
// serves HTTP there, answering every request with its arguments as one
// line: a stand-in for an inference server.
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	line := strings.Join(os.Args[1:], " ")
	fmt.Println(line)
	if addr := os.Getenv("HELLO_HTTP"); addr != "" {
		go serve(addr, line)
	}
	n := 0
	for s := range ch {
		if s != syscall.SIGUSR1 {
			fmt.Printf("got %v\n", s)
			os.Exit(0)
		}
		n++
		fmt.Printf("usr1-%d\n", n)
	}
}

// serve answers every request on addr with line; a failure to listen
// ends the program with status 3.
func serve(addr, line string) {
	err := http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, line)
	}))
	fmt.Println("serve:", err)
	os.Exit(3)
}
