package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/structs"
)

// maxVarInput bounds a variable spec read from stdin or an item read
// from a file (the servers refuse more than 64 KiB of items anyway).
const maxVarInput = 1 << 20

// VarPutCommand is `drover var put`.
type VarPutCommand struct{ Meta }

func (c *VarPutCommand) Synopsis() string { return "Create or update a variable" }

func (c *VarPutCommand) Help() string {
	return helpText(`
Usage: drover var put [options] <path> [<key>=<value>]...
       drover var put [options] <path> -

  Writes the variable at path with the items given as key=value
  arguments (key=@file reads the value from a file), or with the spec
  read from stdin ("-", JSON or HCL with -in). The items replace the
  variable's items. A spec that carries a ModifyIndex is written
  check-and-set unless -force.`, `
Put Options:

  -check-index=<index>
    Write only if the variable's modify index is this one (0: only if
    it does not exist yet).

  -force
    Write whatever the variable's index.

  -in=<json|hcl>
    The format of a spec read from stdin (json by default).`)
}

func (c *VarPutCommand) Run(args []string) int {
	var force bool
	var in string
	var check optionalUint
	fs := c.flagSet("var put")
	fs.BoolVar(&force, "force", false, "")
	fs.StringVar(&in, "in", "json", "")
	fs.Var(&check, "check-index", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) < 1 {
		return c.usageError("var put", "a path and items")
	}
	if force && check.set {
		c.Ui.Error("-force and -check-index cannot be used together")
		return exitError
	}
	v, err := c.varSpec(args, in)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the variable: %s", err))
		return exitError
	}
	var cas *uint64
	switch {
	case check.set:
		cas = &check.v
	case !force && v.ModifyIndex > 0:
		cas = &v.ModifyIndex
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	out, _, err := client.Variables().Put(ctx, v, cas, nil)
	if err != nil {
		return c.varError("writing", v.Path, err)
	}
	c.Ui.Output(fmt.Sprintf("Created variable %q with modify index %d", out.Path, out.ModifyIndex))
	return 0
}

// varSpec builds the variable from key=value arguments or a spec on
// stdin.
func (c *VarPutCommand) varSpec(args []string, in string) (*structs.VariableDecrypted, error) {
	path := args[0]
	if len(args) == 2 && args[1] == "-" {
		src, err := io.ReadAll(io.LimitReader(c.stdin(), maxVarInput+1))
		if err != nil {
			return nil, err
		}
		if len(src) > maxVarInput {
			return nil, fmt.Errorf("stdin: over %d bytes", maxVarInput)
		}
		v, err := parseVarSpec(src, in)
		if err != nil {
			return nil, err
		}
		if v.Path != "" && v.Path != path {
			return nil, fmt.Errorf("the spec's path %q differs from %q", v.Path, path)
		}
		v.Path = path
		return v, nil
	}
	v := &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path}, Items: structs.VariableItems{}}
	for _, kvArg := range args[1:] {
		k, val, ok := strings.Cut(kvArg, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("item %q: want key=value", kvArg)
		}
		if file, isFile := strings.CutPrefix(val, "@"); isFile {
			buf, err := readBounded(file, maxVarInput)
			if err != nil {
				return nil, fmt.Errorf("item %q: %w", k, err)
			}
			val = string(buf)
		}
		v.Items[k] = val
	}
	if len(v.Items) == 0 {
		return nil, errors.New("no items: give key=value arguments or - to read a spec from stdin")
	}
	return v, nil
}

// parseVarSpec reads a variable spec: Nomad's JSON (api.Variable) or
// HCL (path = "...", items { key = "value" }).
func parseVarSpec(src []byte, format string) (*structs.VariableDecrypted, error) {
	switch format {
	case "json":
		var v structs.VariableDecrypted
		dec := json.NewDecoder(bytes.NewReader(src))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		return &v, nil
	case "hcl":
		return parseVarHCL(src)
	}
	return nil, fmt.Errorf("-in %q: want json or hcl", format)
}

func parseVarHCL(src []byte) (*structs.VariableDecrypted, error) {
	file, diags := hclsyntax.ParseConfig(src, "stdin", hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body := file.Body.(*hclsyntax.Body)
	v := &structs.VariableDecrypted{Items: structs.VariableItems{}}
	str := func(a *hclsyntax.Attribute) (string, error) {
		val, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return "", diags
		}
		if val.IsNull() || !val.IsKnown() || val.Type() != cty.String {
			return "", fmt.Errorf("%s: %s: want a string", a.SrcRange, a.Name)
		}
		return val.AsString(), nil
	}
	for name, a := range body.Attributes {
		s, err := str(a)
		if err != nil {
			return nil, err
		}
		switch name {
		case "path":
			v.Path = s
		case "namespace":
			v.Namespace = s
		default:
			return nil, fmt.Errorf("%s: unknown attribute %q; want path, namespace and an items block", a.SrcRange, name)
		}
	}
	for _, b := range body.Blocks {
		if b.Type != "items" {
			return nil, fmt.Errorf("%s: unknown block %q; want items", b.TypeRange, b.Type)
		}
		for name, a := range b.Body.Attributes {
			s, err := str(a)
			if err != nil {
				return nil, err
			}
			v.Items[name] = s
		}
	}
	return v, nil
}

// varError reports a failed call, a lost check-and-set with the index
// found.
func (m *Meta) varError(doing, path string, err error) int {
	var conflict *api.ErrCASConflict
	if errors.As(err, &conflict) {
		m.Ui.Error(fmt.Sprintf("Check-index conflict %s variable %q: the variable's modify index is %d, not %d",
			doing, path, conflict.Conflict.ModifyIndex, conflict.CheckIndex))
		return exitError
	}
	m.Ui.Error(fmt.Sprintf("Error %s variable %q: %s", doing, path, err))
	return exitError
}

// VarGetCommand is `drover var get`.
type VarGetCommand struct{ Meta }

func (c *VarGetCommand) Synopsis() string { return "Read a variable" }

func (c *VarGetCommand) Help() string {
	return helpText(`
Usage: drover var get [options] <path>

  Prints the variable at path with its items.`, `
Get Options:

  -item=<key>
    Print only this item's value.

  -out=<table|json|hcl>
    The output format (table by default).`)
}

func (c *VarGetCommand) Run(args []string) int {
	var item, out string
	fs := c.flagSet("var get")
	fs.StringVar(&item, "item", "", "")
	fs.StringVar(&out, "out", "table", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("var get", "one argument: <path>")
	}
	if out != "table" && out != "json" && out != "hcl" {
		c.Ui.Error(fmt.Sprintf("-out %q: want table, json or hcl", out))
		return exitError
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	v, _, err := client.Variables().Read(ctx, args[0], nil)
	if api.IsNotFound(err) {
		c.Ui.Error(fmt.Sprintf("Variable %q not found", args[0]))
		return exitError
	}
	if err != nil {
		return c.varError("reading", args[0], err)
	}
	switch {
	case item != "":
		val, ok := v.Items[item]
		if !ok {
			c.Ui.Error(fmt.Sprintf("Variable %q has no item %q", args[0], item))
			return exitError
		}
		c.Ui.Output(val)
		return 0
	case out == "json":
		return c.outputJSON(v)
	case out == "hcl":
		c.Ui.Output(varHCL(v))
		return 0
	}
	c.Ui.Output(formatKV([]kv{
		{"Namespace", v.Namespace}, {"Path", v.Path},
		{"Create Time", time.Unix(0, v.CreateTime).Format(time.RFC3339)},
		{"Check Index", fmt.Sprint(v.ModifyIndex)},
	}))
	keys := sortedItemKeys(v.Items)
	rows := make([]kv, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, kv{k, v.Items[k]})
	}
	c.Ui.Output("\nItems\n" + formatKV(rows))
	return 0
}

func sortedItemKeys(items structs.VariableItems) []string {
	keys := make([]string, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// varHCL renders v as the HCL spec var put -in hcl reads.
func varHCL(v *structs.VariableDecrypted) string {
	var b strings.Builder
	fmt.Fprintf(&b, "namespace = %q\npath      = %q\n\nitems {\n", v.Namespace, v.Path)
	for _, k := range sortedItemKeys(v.Items) {
		if hclsyntax.ValidIdentifier(k) {
			fmt.Fprintf(&b, "  %s = %q\n", k, v.Items[k])
		} else {
			fmt.Fprintf(&b, "  %q = %q\n", k, v.Items[k])
		}
	}
	b.WriteString("}")
	return b.String()
}

// VarListCommand is `drover var list [prefix]`.
type VarListCommand struct{ Meta }

func (c *VarListCommand) Synopsis() string { return "List variables" }

func (c *VarListCommand) Help() string {
	return helpText(`
Usage: drover var list [options] [<prefix>]

  Lists the variables (not their items) whose path starts with prefix,
  in the namespace (-namespace "*": all).`, `
List Options:

  -json
    Print the list as JSON.`)
}

func (c *VarListCommand) Run(args []string) int {
	var asJSON bool
	fs := c.flagSet("var list")
	fs.BoolVar(&asJSON, "json", false, "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) > 1 {
		return c.usageError("var list", "at most one argument: <prefix>")
	}
	q := &api.QueryOptions{}
	if len(args) == 1 {
		q.Prefix = args[0]
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	list, _, err := client.Variables().List(ctx, q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing variables: %s", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(list)
	}
	if len(list) == 0 {
		c.Ui.Output("No variables found")
		return 0
	}
	rows := make([][]string, 0, len(list))
	for _, v := range list {
		rows = append(rows, []string{v.Namespace, v.Path, time.Unix(0, v.ModifyTime).Format(time.RFC3339)})
	}
	c.Ui.Output(formatTable([]string{"Namespace", "Path", "Last Updated"}, rows))
	return 0
}

// VarPurgeCommand is `drover var purge`.
type VarPurgeCommand struct{ Meta }

func (c *VarPurgeCommand) Synopsis() string { return "Delete a variable" }

func (c *VarPurgeCommand) Help() string {
	return helpText(`
Usage: drover var purge [options] <path>

  Deletes the variable at path.`, `
Purge Options:

  -check-index=<index>
    Delete only if the variable's modify index is this one.`)
}

func (c *VarPurgeCommand) Run(args []string) int {
	var check optionalUint
	fs := c.flagSet("var purge")
	fs.Var(&check, "check-index", "")
	args, ok := c.parse(fs, args)
	if !ok {
		return exitError
	}
	if len(args) != 1 {
		return c.usageError("var purge", "one argument: <path>")
	}
	var cas *uint64
	if check.set {
		cas = &check.v
	}
	client, ok := c.clientOrFail()
	if !ok {
		return exitError
	}
	ctx, stop := c.context()
	defer stop()
	if _, err := client.Variables().Delete(ctx, args[0], cas, nil); err != nil {
		return c.varError("purging", args[0], err)
	}
	c.Ui.Output(fmt.Sprintf("Successfully purged variable %q!", args[0]))
	return 0
}

// optionalUint is a flag that tells "not given" from 0.
type optionalUint struct {
	v   uint64
	set bool
}

func (o *optionalUint) String() string { return fmt.Sprint(o.v) }

func (o *optionalUint) Set(s string) error {
	var n uint64
	if _, err := fmt.Sscan(s, &n); err != nil {
		return fmt.Errorf("not an index: %q", s)
	}
	o.v, o.set = n, true
	return nil
}
