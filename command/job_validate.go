package command

import "strings"

// JobValidateCommand is `drover job validate FILE`.
type JobValidateCommand struct{ Meta }

func (c *JobValidateCommand) Synopsis() string { return "Check a job file for errors" }

func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover job validate [options] <path>

  Parses and validates the job file at <path> ("-" reads stdin) locally,
  without contacting an agent. Problems are printed as file:line,col and
  the command exits 1.

Validate Options:
` + jobInputHelp)
}

func (c *JobValidateCommand) Run(args []string) int {
	fs := c.flagSet("job validate")
	var in jobInput
	in.flags(fs)
	args, ok := c.parse(fs, args)
	if !ok {
		return 1
	}
	if len(args) != 1 {
		return c.usageError("job validate", "one argument: <path>")
	}
	job, ok := c.loadJobWith(args[0], nil, in)
	if !ok {
		return 1
	}
	if w := job.Warnings(); len(w) > 0 {
		c.Ui.Warn("Job warnings:\n" + strings.Join(w, "\n"))
	}
	c.Ui.Output("Job validation successful")
	return 0
}
