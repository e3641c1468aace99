package command

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"

	"github.com/droverhq/drover/api"
)

// gossipKeySize is the size of a generated gossip key: AES-256.
const gossipKeySize = 32

// OperatorGossipKeyringCommand is `drover operator gossip keyring`.
type OperatorGossipKeyringCommand struct{ Meta }

func (c *OperatorGossipKeyringCommand) Synopsis() string {
	return "Generate, list, install, use and remove gossip encryption keys"
}

func (c *OperatorGossipKeyringCommand) Help() string {
	return helpText(`
Usage: drover operator gossip keyring [options]

  Manages the servers' gossip encryption keys (server.encrypt). Install,
  use and remove act on every server at once; to rotate, install a new
  key, use it, then remove the old one. Exactly one option is given.`, `
Keyring Options:

  -generate
    Print a new random key (32 bytes, base64) for server.encrypt or
    -install. Asks no agent.

  -list
    List the keys and how many servers hold each.

  -install=<key>
    Add a key to every server's keyring.

  -use=<key>
    Encrypt with an installed key from now on.

  -remove=<key>
    Remove a key that is not in use.`)
}

func (c *OperatorGossipKeyringCommand) Run(args []string) int {
	var generate, list bool
	var install, use, remove string
	fs := c.flagSet("operator gossip keyring")
	fs.BoolVar(&generate, "generate", false, "")
	fs.BoolVar(&list, "list", false, "")
	fs.StringVar(&install, "install", "", "")
	fs.StringVar(&use, "use", "", "")
	fs.StringVar(&remove, "remove", "", "")
	rest, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	given := 0
	for _, set := range []bool{generate, list, install != "", use != "", remove != ""} {
		if set {
			given++
		}
	}
	if len(rest) != 0 || given != 1 {
		return c.usageError("operator gossip keyring", "exactly one of -generate, -list, -install, -use or -remove")
	}
	if generate {
		key := make([]byte, gossipKeySize)
		if _, err := rand.Read(key); err != nil {
			c.Ui.Error(fmt.Sprintf("Error generating a key: %s", err))
			return exitError
		}
		c.Ui.Output(base64.StdEncoding.EncodeToString(key))
		return 0
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	agent := client.Agent()
	var (
		resp *api.KeyringResponse
		err  error
		what string
	)
	switch {
	case list:
		what = "listing the keys"
		resp, err = agent.ListKeys(ctx)
	case install != "":
		what = "installing the key"
		resp, err = agent.InstallKey(ctx, install)
	case use != "":
		what = "changing the key in use"
		resp, err = agent.UseKey(ctx, use)
	default:
		what = "removing the key"
		resp, err = agent.RemoveKey(ctx, remove)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error %s: %s", what, err))
		return exitError
	}
	if list {
		c.Ui.Output(formatKeyring(resp))
		return 0
	}
	c.Ui.Output(fmt.Sprintf("==> Done: %d servers answered", resp.NumNodes))
	return 0
}

func formatKeyring(resp *api.KeyringResponse) string {
	keys := make([]string, 0, len(resp.Keys))
	for k := range resp.Keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var rows [][]string
	for _, k := range keys {
		rows = append(rows, []string{k, strconv.Itoa(resp.Keys[k]) + "/" + strconv.Itoa(resp.NumNodes)})
	}
	return formatTable([]string{"Key", "Servers"}, rows)
}
