// Package agent is Drover's composition root: it reads the agent config,
// starts a server and/or a client, and serves the HTTP API.
//
// It is the only package that wires server and client together; it holds
// no scheduling or task logic of its own. The HTTP API is a thin shell
// (one road): each handler decodes the request, calls a server endpoint
// (in process on a server agent, through the client's connection from a
// client-only one) or a client operation the servers route to the
// allocation's node, and encodes the answer. It never reads the state
// store (the dependency test forbids the import) and maps errors to
// statuses by their code only (writeError).
package agent

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/cli"
)

// Command is `drover agent`.
type Command struct {
	Ui cli.Ui
	// ShutdownCh, when set, stops the agent when closed (tests); SIGINT and
	// SIGTERM always do.
	ShutdownCh <-chan struct{}
	// LogOutput is where the agent logs; stderr when nil.
	LogOutput io.Writer
}

// Synopsis implements cli.Command.
func (c *Command) Synopsis() string { return "Run a Drover agent (server, client, or both)" }

// Help implements cli.Command.
func (c *Command) Help() string {
	return strings.TrimSpace(`
Usage: drover agent [options]

  Starts a Drover agent: a server (Raft state, scheduler), a client (runs
  tasks on this machine's GPUs), or both.

Options:

  -dev                 Server and client in one process, data in a temporary
                       directory, HTTP on 127.0.0.1:4646. Simulates GPUs when
                       none are found.
  -dev-gpus=N          Simulated GPUs in -dev mode when none are found (4).
  -config=FILE         Agent config file (HCL); may be repeated.
  -data-dir=DIR        Where state is kept.
  -bind=ADDR           Address to listen on.
  -server              Enable the server.
  -client              Enable the client.
  -servers=ADDR,...    Servers' RPC addresses, for a client.
  -log-level=LEVEL     TRACE, DEBUG, INFO, WARN or ERROR.

  TLS (the tls block) and gossip encryption (server.encrypt) are set in
  the config file. SIGHUP reads the TLS certificate, key and CA files
  again.
`)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Run implements cli.Command.
func (c *Command) Run(args []string) int {
	cfg, err := c.readConfig(args)
	if err != nil {
		c.Ui.Error(err.Error())
		return 1
	}
	out := c.LogOutput
	if out == nil {
		out = os.Stderr
	}
	a, err := NewAgent(cfg, out)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("agent: %v", err))
		return 1
	}
	c.Ui.Output(fmt.Sprintf("==> Drover agent started! HTTP API on %s", a.HTTPURL()))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
wait:
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGHUP {
				// SIGHUP reloads the TLS files, as in Nomad; the rest of
				// the config is read at start only.
				if err := a.Reload(); err != nil {
					c.Ui.Error(fmt.Sprintf("==> %v; keeping the loaded certificates", err))
				}
				continue
			}
			c.Ui.Output(fmt.Sprintf("==> Caught signal %v; shutting down", s))
			break wait
		case <-c.ShutdownCh:
			break wait
		}
	}
	if err := a.Shutdown(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error stopping agent: %v", err))
		return 1
	}
	return 0
}

func (c *Command) readConfig(args []string) (*Config, error) {
	var (
		dev, srv, cl       bool
		devGPUs            int
		configs, servers   stringList
		dataDir, bind, lvl string
	)
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&dev, "dev", false, "")
	fs.IntVar(&devGPUs, "dev-gpus", -1, "")
	fs.Var(&configs, "config", "")
	fs.StringVar(&dataDir, "data-dir", "", "")
	fs.StringVar(&bind, "bind", "", "")
	fs.BoolVar(&srv, "server", false, "")
	fs.BoolVar(&cl, "client", false, "")
	fs.Var(&servers, "servers", "")
	fs.StringVar(&lvl, "log-level", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%v\n\n%s", err, c.Help())
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q\n\n%s", fs.Args(), c.Help())
	}
	cfg := DefaultConfig()
	if dev {
		cfg = DevConfig()
	}
	for _, path := range configs {
		fc, err := ParseConfigFile(path)
		if err != nil {
			return nil, err
		}
		cfg.Merge(fc)
	}
	flags := &Config{DataDir: dataDir, BindAddr: bind, LogLevel: lvl,
		Server: &ServerConfig{Enabled: srv}, Client: &ClientConfig{Enabled: cl}}
	for _, s := range servers {
		flags.Client.Servers = append(flags.Client.Servers, strings.Split(s, ",")...)
	}
	cfg.Merge(flags)
	if devGPUs >= 0 {
		if !dev {
			return nil, fmt.Errorf("-dev-gpus needs -dev")
		}
		cfg.DevGPUs = devGPUs
	}
	return cfg, nil
}
