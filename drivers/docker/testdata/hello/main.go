// Command hello is the docker driver's test workload, built static and
// put in a FROM scratch image. Each argument is a step, run in order:
//
//	echo:TEXT     print TEXT to stdout        err:TEXT   print TEXT to stderr
//	env:NAME      print NAME=value            args       print the arguments
//	lines:N       print line-1 .. line-N      ready      print "ready"
//	blocks:N      print N 1 KiB lines "block-000001 xxx..."
//	sleep:DUR     sleep (Go duration)         exit:CODE  exit with CODE
//	trap:SIG:CODE on SIG print got-SIG and exit CODE
//	ignore:SIG    ignore SIG
//	wait          block until a signal ends the program
//	cat:PATH      print the file PATH, or "cat: <error>" to stderr and exit 1
//
// SIGTERM and SIGINT not trapped or ignored end the program with
// 128+signal, as a shell reports a process killed by it (as PID 1 in a
// container the kernel would not apply their default action).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var sigs = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "USR1": syscall.SIGUSR1}

func main() {
	var mu sync.Mutex // guards traps and ignored
	traps := map[os.Signal]int{}
	ignored := map[os.Signal]bool{}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	go func() {
		for s := range ch {
			mu.Lock()
			ignore := ignored[s]
			code, trapped := traps[s]
			mu.Unlock()
			if ignore {
				continue
			}
			if trapped {
				fmt.Printf("got-%s\n", sigName(s))
				os.Exit(code)
			}
			os.Exit(128 + int(s.(syscall.Signal)))
		}
	}()
	for _, step := range os.Args[1:] {
		name, arg, _ := strings.Cut(step, ":")
		switch name {
		case "echo":
			fmt.Println(arg)
		case "err":
			fmt.Fprintln(os.Stderr, arg)
		case "env":
			fmt.Printf("%s=%s\n", arg, os.Getenv(arg))
		case "args":
			fmt.Printf("args=%q\n", os.Args[1:])
		case "lines":
			n, _ := strconv.Atoi(arg)
			for i := 1; i <= n; i++ {
				fmt.Printf("line-%d\n", i)
			}
		case "blocks":
			n, _ := strconv.Atoi(arg)
			pad := strings.Repeat("x", 1024-len("block-000000 \n"))
			for i := 1; i <= n; i++ {
				fmt.Printf("block-%06d %s\n", i, pad)
			}
		case "ready":
			fmt.Println("ready")
		case "sleep":
			d, _ := time.ParseDuration(arg)
			time.Sleep(d)
		case "exit":
			code, _ := strconv.Atoi(arg)
			os.Exit(code)
		case "trap":
			sig, code, _ := strings.Cut(arg, ":")
			c, _ := strconv.Atoi(code)
			mu.Lock()
			traps[sigs[sig]] = c
			mu.Unlock()
		case "ignore":
			mu.Lock()
			ignored[sigs[arg]] = true
			mu.Unlock()
		case "wait":
			select {}
		case "cat":
			b, err := os.ReadFile(arg)
			if err != nil {
				fmt.Fprintln(os.Stderr, "cat:", err)
				os.Exit(1)
			}
			os.Stdout.Write(b)
		default:
			fmt.Fprintf(os.Stderr, "hello: unknown step %q\n", step)
			os.Exit(2)
		}
	}
}

func sigName(s os.Signal) string {
	for name, sig := range sigs {
		if sig == s {
			return name
		}
	}
	return s.String()
}
