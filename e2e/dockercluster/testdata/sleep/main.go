// Command sleep is the task of the container cluster suite's jobs: the
// image is FROM scratch, so it brings its own sleep. It sleeps for its
// argument (a Go duration, "2s"), or until SIGTERM or SIGINT, and exits 0.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: sleep DURATION")
		os.Exit(2)
	}
	d, err := time.ParseDuration(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sleep: %v\n", err)
		os.Exit(2)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-time.After(d):
	case <-ch:
	}
}
