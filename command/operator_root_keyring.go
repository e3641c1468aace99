package command

import (
	"fmt"
	"time"
)

// OperatorRootKeyringRotateCommand is `drover operator root keyring rotate`.
type OperatorRootKeyringRotateCommand struct{ Meta }

func (c *OperatorRootKeyringRotateCommand) Synopsis() string {
	return "Make a new root key the one variables are encrypted with"
}

func (c *OperatorRootKeyringRotateCommand) Help() string {
	return helpText(`
Usage: drover operator root keyring rotate [options]

  Generates a new root key on the leader, replicated to every server's
  keystore, and makes it the active one: new variables are encrypted with
  it, older ones stay readable with their key. Needs a management token.`, "")
}

func (c *OperatorRootKeyringRotateCommand) Run(args []string) int {
	fs := c.flagSet("operator root keyring rotate")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator root keyring rotate", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	meta, _, err := client.RootKeys().Rotate(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error rotating the root key: %s", err))
		return exitError
	}
	c.Ui.Output(formatTable([]string{"Key", "State", "Create Time"},
		[][]string{{meta.KeyID, meta.State, time.Unix(0, meta.CreateTime).Format(time.RFC3339)}}))
	return 0
}

// OperatorRootKeyringListCommand is `drover operator root keyring list`.
type OperatorRootKeyringListCommand struct{ Meta }

func (c *OperatorRootKeyringListCommand) Synopsis() string { return "List the variables' root keys" }

func (c *OperatorRootKeyringListCommand) Help() string {
	return helpText(`
Usage: drover operator root keyring list [options]

  Lists the root keys (never their material): ID, state, creation time.
  Needs a management token.`, "")
}

func (c *OperatorRootKeyringListCommand) Run(args []string) int {
	fs := c.flagSet("operator root keyring list")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("operator root keyring list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	keys, _, err := client.RootKeys().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing root keys: %s", err))
		return exitError
	}
	if len(keys) == 0 {
		c.Ui.Output("No root keys yet (the first variable written creates one)")
		return 0
	}
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k.KeyID, k.State, time.Unix(0, k.CreateTime).Format(time.RFC3339)})
	}
	c.Ui.Output(formatTable([]string{"Key", "State", "Create Time"}, rows))
	return 0
}
