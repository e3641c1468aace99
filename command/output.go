package command

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"text/template"
)

// outputFormat is the -json and -t flags of the commands that read:
// print the answer as JSON, or through a Go template, as Nomad's do.
type outputFormat struct {
	json bool
	tmpl string
}

// outputOptionsHelp documents addOutputFlags' flags.
const outputOptionsHelp = `  -json
    Print the result as JSON.

  -t <template>
    Format the result with a Go template, e.g. -t '{{.ID}}' (the fields
    are those of -json; the function json renders a value as JSON).`

// addOutputFlags registers -json and -t on fs.
func addOutputFlags(fs *flag.FlagSet) *outputFormat {
	o := &outputFormat{}
	fs.BoolVar(&o.json, "json", false, "")
	fs.StringVar(&o.tmpl, "t", "", "")
	return o
}

// set reports whether either flag asks for raw output.
func (o *outputFormat) set() bool { return o.json || o.tmpl != "" }

// outputFormatted prints v as JSON or through the template.
func (m *Meta) outputFormatted(o *outputFormat, v any) int {
	if o.json && o.tmpl != "" {
		m.Ui.Error("Both -json and -t given: use one.")
		return 1
	}
	if o.tmpl == "" {
		return m.outputJSON(v)
	}
	s, err := formatTemplate(o.tmpl, v)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error formatting with -t: %s", err))
		return 1
	}
	m.Ui.Output(s)
	return 0
}

// formatTemplate renders v through the Go template tmpl. v goes through
// JSON first, so the template sees the fields -json prints (by their
// JSON names, maps as maps).
func formatTemplate(tmpl string, v any) (string, error) {
	t, err := template.New("-t").Funcs(template.FuncMap{"json": templateJSON}).Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return "", err
	}
	var data any
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

func templateJSON(v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return string(b), err
}
