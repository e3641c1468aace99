// Command dockerhello is the workload of the e2e docker tests, built
// static and put in a FROM scratch image. It prints its arguments as one
// line, then runs until SIGTERM or SIGINT (exit 0); each SIGUSR1 prints
// "usr1-N", N counting from 1, so a test can produce output at a moment
// of its choosing.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	fmt.Println(strings.Join(os.Args[1:], " "))
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
