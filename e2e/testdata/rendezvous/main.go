// Command rendezvous is the e2e's training stand-in: rank 0 listens at
// MASTER_ADDR:MASTER_PORT and collects one line from every other rank;
// each rank writes "rank=R world=W[ peers=...]" to <out>/rank-R.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "rendezvous:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	rank, err := strconv.Atoi(os.Getenv("RANK"))
	if err != nil {
		return fmt.Errorf("RANK: %w", err)
	}
	world, err := strconv.Atoi(os.Getenv("WORLD_SIZE"))
	if err != nil {
		return fmt.Errorf("WORLD_SIZE: %w", err)
	}
	if os.Getenv("DROVER_GANG_RANK") != os.Getenv("RANK") {
		return fmt.Errorf("DROVER_GANG_RANK %q != RANK %q", os.Getenv("DROVER_GANG_RANK"), os.Getenv("RANK"))
	}
	addr := net.JoinHostPort(os.Getenv("MASTER_ADDR"), os.Getenv("MASTER_PORT"))
	line := fmt.Sprintf("rank=%d world=%d", rank, world)
	deadline := time.Now().Add(90 * time.Second)
	if rank == 0 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		defer ln.Close()
		ln.(*net.TCPListener).SetDeadline(deadline)
		var peers []string
		for len(peers) < world-1 {
			c, err := ln.Accept()
			if err != nil {
				return fmt.Errorf("accept after %v: %w", peers, err)
			}
			msg, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			peers = append(peers, strings.TrimSpace(msg))
		}
		sort.Strings(peers)
		line += " peers=" + strings.Join(peers, ",")
	} else {
		for {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err == nil {
				fmt.Fprintf(c, "%d\n", rank)
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	fmt.Println(line)
	return os.WriteFile(filepath.Join(out, "rank-"+strconv.Itoa(rank)), []byte(line+"\n"), 0o644)
}
