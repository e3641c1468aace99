package command

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/droverhq/drover/structs"
)

// ACLBootstrapCommand is `drover acl bootstrap [secret-file]`.
type ACLBootstrapCommand struct{ Meta }

func (c *ACLBootstrapCommand) Synopsis() string { return "Create the cluster's first management token" }

func (c *ACLBootstrapCommand) Help() string {
	return helpText(`
Usage: drover acl bootstrap [options] [<secret-file>]

  Creates the first management token of a cluster whose servers run with
  acl { enabled = true }, and prints it, secret included: keep the secret
  safe, it may do anything. Bootstrap works once. With a file, the token's
  secret is the UUID in it ("-" reads standard input), so that automation
  knows it in advance.`, `
Bootstrap Options:

  -json
    Print the token as JSON.`)
}

func (c *ACLBootstrapCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("acl bootstrap")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) > 1 {
		return c.usageError("acl bootstrap", "at most one argument: <secret-file>")
	}
	var secret string
	if len(args) == 1 {
		src, err := c.readArg(args[0], 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading the bootstrap secret: %s", err))
			return exitError
		}
		secret = strings.TrimSpace(string(src))
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	token, _, err := client.ACLTokens().Bootstrap(ctx, secret, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error bootstrapping ACLs: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(token)
	}
	c.Ui.Output(formatToken(token))
	return 0
}

// readArg reads a file argument ("-" is standard input), at most limit
// KiB.
func (m *Meta) readArg(path string, limitKiB int64) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = m.stdin()
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	src, err := io.ReadAll(io.LimitReader(r, limitKiB<<10+1))
	if err != nil {
		return nil, err
	}
	if int64(len(src)) > limitKiB<<10 {
		return nil, fmt.Errorf("%s: larger than %d KiB", path, limitKiB)
	}
	return src, nil
}

// formatToken prints a token's details, its secret included (the caller
// was just given it, or asked for it by accessor with a management
// token).
func formatToken(t *structs.ACLToken) string {
	expires := "<none>"
	if t.ExpirationTime != nil {
		expires = formatClock(*t.ExpirationTime)
	}
	return formatKV([]kv{
		{"Accessor ID", t.AccessorID},
		{"Secret ID", t.SecretID},
		{"Name", orNone(t.Name)},
		{"Type", t.Type},
		{"Global", strconv.FormatBool(t.Global)},
		{"Policies", "[" + strings.Join(t.Policies, " ") + "]"},
		{"Create Time", formatClock(t.CreateTime)},
		{"Expiry Time", expires},
		{"Create Index", strconv.FormatUint(t.CreateIndex, 10)},
		{"Modify Index", strconv.FormatUint(t.ModifyIndex, 10)},
	})
}

// ACLPolicyApplyCommand is `drover acl policy apply [-description] NAME FILE`.
type ACLPolicyApplyCommand struct{ Meta }

func (c *ACLPolicyApplyCommand) Synopsis() string { return "Create or update an ACL policy" }

func (c *ACLPolicyApplyCommand) Help() string {
	return helpText(`
Usage: drover acl policy apply [options] <name> <path>

  Creates or replaces the policy <name> with the rules in <path> ("-"
  reads standard input), in Nomad's policy language:

    namespace "team-a" { policy = "write" }
    namespace "*"      { capabilities = ["list-jobs", "read-job"] }
    node     { policy = "read" }
    queue "research"   { policy = "write" }    # Drover: submit to a queue

  Rules that do not parse are refused with the line and column. Needs a
  management token.`, `
Apply Options:

  -description=<text>
    A description of the policy.`)
}

func (c *ACLPolicyApplyCommand) Run(args []string) int {
	var description string
	fs := c.flagSet("acl policy apply")
	fs.StringVar(&description, "description", "", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 2 {
		return c.usageError("acl policy apply", "two arguments: <name> <path>")
	}
	rules, err := c.readArg(args[1], 64)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading policy rules: %s", err))
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	p := &structs.ACLPolicy{Name: args[0], Description: description, Rules: string(rules)}
	if _, err := client.ACLPolicies().Upsert(ctx, p, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying policy %q: %s", p.Name, err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully wrote %q ACL policy!", p.Name))
	return 0
}

// ACLPolicyListCommand is `drover acl policy list`.
type ACLPolicyListCommand struct{ Meta }

func (c *ACLPolicyListCommand) Synopsis() string { return "List ACL policies" }

func (c *ACLPolicyListCommand) Help() string {
	return helpText(`
Usage: drover acl policy list [options]

  Lists the ACL policies: all of them for a management token, those it
  holds for a client token.`, `
List Options:

  -json
    Print the policies as JSON.`)
}

func (c *ACLPolicyListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("acl policy list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 0 {
		return c.usageError("acl policy list", "no arguments")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	policies, _, err := client.ACLPolicies().List(ctx, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing ACL policies: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(policies)
	}
	if len(policies) == 0 {
		c.Ui.Output("No policies found")
		return 0
	}
	rows := make([][]string, 0, len(policies))
	for _, p := range policies {
		rows = append(rows, []string{p.Name, p.Description})
	}
	c.Ui.Output(formatTable([]string{"Name", "Description"}, rows))
	return 0
}

// ACLPolicyInfoCommand is `drover acl policy info NAME`.
type ACLPolicyInfoCommand struct{ Meta }

func (c *ACLPolicyInfoCommand) Synopsis() string { return "Show an ACL policy and its rules" }

func (c *ACLPolicyInfoCommand) Help() string {
	return helpText(`
Usage: drover acl policy info [options] <name>

  Shows a policy with its rules.`, `
Info Options:

  -json
    Print the policy as JSON.`)
}

func (c *ACLPolicyInfoCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("acl policy info")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("acl policy info", "one argument: <name>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	p, _, err := client.ACLPolicies().Info(ctx, args[0], nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading ACL policy %q: %s", args[0], err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(p)
	}
	c.Ui.Output(formatKV([]kv{
		{"Name", p.Name},
		{"Description", orNone(p.Description)},
		{"CreateIndex", strconv.FormatUint(p.CreateIndex, 10)},
		{"ModifyIndex", strconv.FormatUint(p.ModifyIndex, 10)},
	}))
	c.Ui.Output("\nRules\n\n" + strings.TrimRight(p.Rules, "\n"))
	return 0
}

// ACLPolicyDeleteCommand is `drover acl policy delete NAME`.
type ACLPolicyDeleteCommand struct{ Meta }

func (c *ACLPolicyDeleteCommand) Synopsis() string { return "Delete an ACL policy" }

func (c *ACLPolicyDeleteCommand) Help() string {
	return helpText(`
Usage: drover acl policy delete <name>

  Deletes a policy. Tokens that name it keep the name and lose what it
  granted, at once.`, "")
}

func (c *ACLPolicyDeleteCommand) Run(args []string) int {
	fs := c.flagSet("acl policy delete")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("acl policy delete", "one argument: <name>")
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.ACLPolicies().Delete(ctx, args[0], nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting ACL policy %q: %s", args[0], err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted %q ACL policy!", args[0]))
	return 0
}
