package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/api"
)

// Meta is what every command shares: the UI, where raw output goes, and
// the flags that pick the agent.
type Meta struct {
	Ui cli.Ui
	// Stdout receives raw bytes (alloc logs); nil means os.Stdout.
	Stdout io.Writer
	// Stderr receives a remote command's stderr (alloc exec); nil means
	// os.Stderr.
	Stderr io.Writer
	// Stdin is what alloc exec forwards; nil means os.Stdin.
	Stdin io.Reader
	// ShutdownCh, when set, is handed to the agent command and ends
	// monitor and operator debug (tests).
	ShutdownCh <-chan struct{}
	// Now is the clock for relative times; nil means time.Now.
	Now func() time.Time

	address   string
	namespace string
	region    string
	// TLS and ACL settings (-ca-cert ... -token); they override the
	// environment's (api.DefaultConfig).
	caCert, clientCert, clientKey string
	tlsServerName                 string
	tlsSkipVerify                 optionalBool
	token                         string
}

// flagSet returns a flag set with the flags every client command takes:
// -address, -namespace, -region, the TLS ones (-ca-cert, -client-cert,
// -client-key, -tls-server-name, -tls-skip-verify) and -token. Parse
// errors are reported by parse.
func (m *Meta) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&m.address, "address", "", "")
	fs.StringVar(&m.namespace, "namespace", "", "")
	fs.StringVar(&m.region, "region", "", "")
	fs.StringVar(&m.caCert, "ca-cert", "", "")
	fs.StringVar(&m.clientCert, "client-cert", "", "")
	fs.StringVar(&m.clientKey, "client-key", "", "")
	fs.StringVar(&m.tlsServerName, "tls-server-name", "", "")
	fs.Var(&m.tlsSkipVerify, "tls-skip-verify", "")
	fs.StringVar(&m.token, "token", "", "")
	return fs
}

// parse parses args with fs, letting flags and positional arguments mix
// ("job stop web -purge") until a "--". On error it prints the problem and
// a pointer to -help, and returns ok false.
func (m *Meta) parse(fs *flag.FlagSet, args []string) (positional []string, ok bool) {
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		m.parseError(fs, err)
		return nil, false
	}
	return positional, true
}

// parseLeading parses only the flags before the first positional
// argument (or "--") and returns everything after them as is: for
// commands whose trailing arguments belong to another program.
func (m *Meta) parseLeading(fs *flag.FlagSet, args []string) (rest []string, ok bool) {
	if err := fs.Parse(args); err != nil {
		m.parseError(fs, err)
		return nil, false
	}
	return fs.Args(), true
}

// parseError prints a flag parse error and a pointer to -help.
func (m *Meta) parseError(fs *flag.FlagSet, err error) {
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	m.Ui.Error(fmt.Sprintf("Error parsing arguments: %s", err))
	m.Ui.Error(fmt.Sprintf("Run 'drover %s -help' for usage.", fs.Name()))
}

// parseInterspersed is fs.Parse that keeps going past positional
// arguments. Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// usageError reports a wrong number of arguments.
func (m *Meta) usageError(name, want string) int {
	m.Ui.Error(fmt.Sprintf("This command takes %s.", want))
	m.Ui.Error(fmt.Sprintf("Run 'drover %s -help' for usage.", name))
	return 1
}

// client returns an API client for the flags and environment.
func (m *Meta) client() (*api.Client, error) {
	cfg := api.DefaultConfig()
	if m.address != "" {
		cfg.Address = m.address
	}
	if m.namespace != "" {
		cfg.Namespace = m.namespace
	}
	if m.region != "" {
		cfg.Region = m.region
	}
	if m.token != "" {
		cfg.SecretID = m.token
	}
	t := cfg.TLSConfig
	if m.caCert != "" {
		t.CACert = m.caCert
	}
	if m.clientCert != "" {
		t.ClientCert = m.clientCert
	}
	if m.clientKey != "" {
		t.ClientKey = m.clientKey
	}
	if m.tlsServerName != "" {
		t.TLSServerName = m.tlsServerName
	}
	t.Insecure = m.tlsSkipVerify.or(t.Insecure)
	c, err := api.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	return c, nil
}

// clientOrFail returns a client or prints why not.
func (m *Meta) clientOrFail() (*api.Client, bool) {
	c, err := m.client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %s", err))
		return nil, false
	}
	return c, true
}

// context returns a context cancelled by SIGINT or SIGTERM, so a blocking
// query or log stream ends cleanly on Ctrl-C.
func (m *Meta) context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func (m *Meta) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Meta) stdout() io.Writer {
	if m.Stdout != nil {
		return m.Stdout
	}
	return os.Stdout
}

func (m *Meta) stderr() io.Writer {
	if m.Stderr != nil {
		return m.Stderr
	}
	return os.Stderr
}

func (m *Meta) stdin() io.Reader {
	if m.Stdin != nil {
		return m.Stdin
	}
	return os.Stdin
}

// outputJSON prints v as indented JSON.
func (m *Meta) outputJSON(v any) int {
	s, err := formatJSON(v)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error formatting JSON: %s", err))
		return 1
	}
	m.Ui.Output(s)
	return 0
}

// generalOptions is the help text of the flags from flagSet.
const generalOptions = `General Options:

  -address=<addr>
    The address of the Drover agent. Overrides DROVER_ADDR (or
    NOMAD_ADDR); the default is http://127.0.0.1:4646.

  -namespace=<namespace>
    The namespace to query. Overrides DROVER_NAMESPACE (or
    NOMAD_NAMESPACE); the default is "default".

  -region=<region>
    The region to send requests to. Overrides DROVER_REGION (or
    NOMAD_REGION).

  -ca-cert=<path>
    The CA certificate (PEM) to verify the agent's HTTPS certificate with.
    Overrides DROVER_CACERT (or NOMAD_CACERT).

  -client-cert=<path>
    The client certificate (PEM) to present to an agent that verifies
    HTTPS clients. Overrides DROVER_CLIENT_CERT (or NOMAD_CLIENT_CERT).

  -client-key=<path>
    The client certificate's key (PEM). Overrides DROVER_CLIENT_KEY (or
    NOMAD_CLIENT_KEY).

  -tls-server-name=<name>
    The name the agent's certificate must carry, when it is not the
    address's host. Overrides DROVER_TLS_SERVER_NAME (or
    NOMAD_TLS_SERVER_NAME).

  -tls-skip-verify
    Do not verify the agent's certificate (insecure). Overrides
    DROVER_SKIP_VERIFY (or NOMAD_SKIP_VERIFY).

  -token=<secret>
    The ACL token to send (X-Nomad-Token). Overrides DROVER_TOKEN (or
    NOMAD_TOKEN).`

// helpText trims and joins a command's help with the general options.
func helpText(usage, options string) string {
	parts := []string{strings.TrimSpace(usage), generalOptions}
	if options = strings.TrimSpace(options); options != "" {
		parts = append(parts, options)
	}
	return strings.Join(parts, "\n\n")
}
