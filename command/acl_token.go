package command

import (
	"flag"
	"fmt"
	"strings"

	"github.com/droverhq/drover/structs"
)

// policyFlags is a repeatable -policy flag.
type policyFlags []string

func (p *policyFlags) String() string { return strings.Join(*p, ",") }

func (p *policyFlags) Set(v string) error {
	*p = append(*p, v)
	return nil
}

// ACLTokenCreateCommand is `drover acl token create`.
type ACLTokenCreateCommand struct{ Meta }

func (c *ACLTokenCreateCommand) Synopsis() string { return "Create an ACL token" }

func (c *ACLTokenCreateCommand) Help() string {
	return helpText(`
Usage: drover acl token create [options]

  Creates a token and prints it, secret included. A client token may do
  what its policies grant; a management token may do anything. Needs a
  management token.`, `
Create Options:

  -name=<name>
    A name for the token.

  -type=<client|management>
    The token's type (default client).

  -policy=<name>
    A policy the token holds; repeat for several. A client token needs
    at least one.

  -global
    Mark the token global (replicated to other regions).

  -json
    Print the token as JSON.`)
}

func (c *ACLTokenCreateCommand) Run(args []string) int {
	var name, typ string
	var global, asJSON bool
	var policies policyFlags
	fs := c.flagSet("acl token create")
	fs.StringVar(&name, "name", "", "")
	fs.StringVar(&typ, "type", structs.ACLClientToken, "")
	fs.Var(&policies, "policy", "")
	fs.BoolVar(&global, "global", false, "")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("acl token create", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	token, _, err := client.ACLTokens().Create(ctx, &structs.ACLToken{Name: name, Type: typ, Policies: policies, Global: global}, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating ACL token: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(token)
	}
	c.Ui.Output(formatToken(token))
	return 0
}

// ACLTokenUpdateCommand is `drover acl token update`.
type ACLTokenUpdateCommand struct{ Meta }

func (c *ACLTokenUpdateCommand) Synopsis() string { return "Change an ACL token's name or policies" }

func (c *ACLTokenUpdateCommand) Help() string {
	return helpText(`
Usage: drover acl token update [options] <accessor>

  Changes a token's name or policies; options not given keep their
  values. A token's secret and type never change.`, `
Update Options:

  -name=<name>
    The token's new name.

  -policy=<name>
    A policy the token holds; repeat for several. Given, it replaces the
    token's policies.`)
}

func (c *ACLTokenUpdateCommand) Run(args []string) int {
	var name string
	var policies policyFlags
	fs := c.flagSet("acl token update")
	fs.StringVar(&name, "name", "", "")
	fs.Var(&policies, "policy", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("acl token update", "one argument: <accessor>")
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	token, _, err := client.ACLTokens().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading ACL token %q: %s", args[0], err))
		return exitError
	}
	if given["name"] {
		token.Name = name
	}
	if given["policy"] {
		token.Policies = policies
	}
	updated, _, err := client.ACLTokens().Update(ctx, token, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating ACL token %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(formatToken(updated))
	return 0
}

// ACLTokenListCommand is `drover acl token list`.
type ACLTokenListCommand struct{ Meta }

func (c *ACLTokenListCommand) Synopsis() string { return "List ACL tokens" }

func (c *ACLTokenListCommand) Help() string {
	return helpText(`
Usage: drover acl token list [options]

  Lists the tokens, never their secrets. Needs a management token.`, `
List Options:

  -json
    Print the tokens as JSON.`)
}

func (c *ACLTokenListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("acl token list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("acl token list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	tokens, _, err := client.ACLTokens().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing ACL tokens: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(tokens)
	}
	rows := make([][]string, 0, len(tokens))
	for _, t := range tokens {
		rows = append(rows, []string{orNone(t.Name), t.Type, fmt.Sprint(t.Global), t.AccessorID, strings.Join(t.Policies, ",")})
	}
	c.Ui.Output(formatTable([]string{"Name", "Type", "Global", "Accessor ID", "Policies"}, rows))
	return 0
}

// ACLTokenInfoCommand is `drover acl token info ACCESSOR`.
type ACLTokenInfoCommand struct{ Meta }

func (c *ACLTokenInfoCommand) Synopsis() string { return "Show an ACL token" }

func (c *ACLTokenInfoCommand) Help() string {
	return helpText(`
Usage: drover acl token info [options] <accessor>

  Shows a token, secret included: a management token may read any token,
  a client token only itself.`, `
Info Options:

  -json
    Print the token as JSON.`)
}

func (c *ACLTokenInfoCommand) Run(args []string) int {
	return c.show(args, false)
}

// ACLTokenSelfCommand is `drover acl token self`.
type ACLTokenSelfCommand struct{ ACLTokenInfoCommand }

func (c *ACLTokenSelfCommand) Synopsis() string { return "Show the token in use" }

func (c *ACLTokenSelfCommand) Help() string {
	return helpText(`
Usage: drover acl token self [options]

  Shows the token the CLI sends (-token, DROVER_TOKEN or NOMAD_TOKEN).`, `
Self Options:

  -json
    Print the token as JSON.`)
}

func (c *ACLTokenSelfCommand) Run(args []string) int {
	return c.show(args, true)
}

func (c *ACLTokenInfoCommand) show(args []string, self bool) int {
	name := "acl token info"
	if self {
		name = "acl token self"
	}
	var asJSON bool
	fs := c.flagSet(name)
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	switch {
	case self && len(args) != 0:
		return c.usageError(name, "no arguments")
	case !self && len(args) != 1:
		return c.usageError(name, "one argument: <accessor>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	var token *structs.ACLToken
	var err error
	if self {
		token, _, err = client.ACLTokens().Self(ctx, nil)
	} else {
		token, _, err = client.ACLTokens().Info(ctx, args[0], nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading ACL token: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(token)
	}
	c.Ui.Output(formatToken(token))
	return 0
}

// ACLTokenDeleteCommand is `drover acl token delete ACCESSOR`.
type ACLTokenDeleteCommand struct{ Meta }

func (c *ACLTokenDeleteCommand) Synopsis() string { return "Delete an ACL token" }

func (c *ACLTokenDeleteCommand) Help() string {
	return helpText(`
Usage: drover acl token delete <accessor>

  Deletes a token; requests with its secret are refused at once.`, "")
}

func (c *ACLTokenDeleteCommand) Run(args []string) int {
	fs := c.flagSet("acl token delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("acl token delete", "one argument: <accessor>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.ACLTokens().Delete(ctx, args[0], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting ACL token %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Token %s successfully deleted", args[0]))
	return 0
}
