package command

import (
	"bytes"
	"fmt"
	"os"

	"github.com/hashicorp/cli"

	"github.com/droverhq/drover/command/agent"
	"github.com/droverhq/drover/structs"
)

// Main runs the CLI with os.Args-style args (program name first) on the
// process's stdin, stdout and stderr, and returns the exit code.
func Main(args []string) int {
	ui := &cli.BasicUi{Reader: os.Stdin, Writer: os.Stdout, ErrorWriter: os.Stderr}
	if len(args) > 0 {
		args = args[1:]
	}
	return Run(args, Meta{Ui: ui, Stdout: os.Stdout})
}

// Run runs the CLI with args (program name excluded) and returns the exit
// code. Help and usage go through m.Ui.
func Run(args []string, m Meta) int {
	if install, uninstall := autocompleteRequest(args); install || uninstall {
		return runAutocompleteInstall(m, uninstall) // autocomplete.go
	}
	helpOut, errOut := &lineWriter{emit: m.Ui.Output}, &lineWriter{emit: m.Ui.Error}
	c := &cli.CLI{
		Name:         "drover",
		Version:      versionString(),
		Args:         guardExecArgs(args),
		Commands:     Commands(m),
		HelpFunc:     cli.BasicHelpFunc("drover"),
		HelpWriter:   helpOut,
		ErrorWriter:  errOut,
		Autocomplete: true,
	}
	code, err := c.Run()
	helpOut.flush()
	errOut.flush()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error executing CLI: %s", err))
		return 1
	}
	if code == 127 { // cli's "no such command"; its help is already printed
		return 1
	}
	return code
}

// Commands returns every command, each sharing m.
func Commands(m Meta) map[string]cli.CommandFactory {
	return map[string]cli.CommandFactory{
		"agent": func() (cli.Command, error) {
			return &agent.Command{Ui: m.Ui, ShutdownCh: m.ShutdownCh}, nil
		},
		"job": func() (cli.Command, error) {
			return &groupCommand{name: "job", synopsis: "Run, inspect and stop jobs"}, nil
		},
		"job run":      func() (cli.Command, error) { return &JobRunCommand{Meta: m}, nil },
		"job plan":     func() (cli.Command, error) { return &JobPlanCommand{Meta: m}, nil },
		"job status":   func() (cli.Command, error) { return &JobStatusCommand{Meta: m}, nil },
		"job stop":     func() (cli.Command, error) { return &JobStopCommand{Meta: m}, nil },
		"job validate": func() (cli.Command, error) { return &JobValidateCommand{Meta: m}, nil },
		"job dispatch": func() (cli.Command, error) { return &JobDispatchCommand{Meta: m}, nil },
		"job periodic": func() (cli.Command, error) {
			return &groupCommand{name: "job periodic", synopsis: "Interact with periodic jobs"}, nil
		},
		"job periodic force": func() (cli.Command, error) { return &JobPeriodicForceCommand{Meta: m}, nil },
		"job history":        func() (cli.Command, error) { return &JobHistoryCommand{Meta: m}, nil },
		"job revert":         func() (cli.Command, error) { return &JobRevertCommand{Meta: m}, nil },
		"job inspect":        func() (cli.Command, error) { return &JobInspectCommand{Meta: m}, nil },
		"deployment": func() (cli.Command, error) {
			return &groupCommand{name: "deployment", synopsis: "Follow, promote, fail, pause and resume deployments"}, nil
		},
		"deployment list":    func() (cli.Command, error) { return &DeploymentListCommand{Meta: m}, nil },
		"deployment status":  func() (cli.Command, error) { return &DeploymentStatusCommand{Meta: m}, nil },
		"deployment promote": func() (cli.Command, error) { return deploymentCommands(m)["promote"](), nil },
		"deployment fail":    func() (cli.Command, error) { return deploymentCommands(m)["fail"](), nil },
		"deployment pause":   func() (cli.Command, error) { return deploymentCommands(m)["pause"](), nil },
		"deployment resume":  func() (cli.Command, error) { return deploymentCommands(m)["resume"](), nil },
		"job allocs":         func() (cli.Command, error) { return &JobAllocsCommand{Meta: m}, nil },
		"job scale":          func() (cli.Command, error) { return &JobScaleCommand{Meta: m}, nil },
		"eval": func() (cli.Command, error) {
			return &groupCommand{name: "eval", synopsis: "List and inspect evaluations"}, nil
		},
		"eval list":   func() (cli.Command, error) { return &EvalListCommand{Meta: m}, nil },
		"eval status": func() (cli.Command, error) { return &EvalStatusCommand{Meta: m}, nil },
		"event": func() (cli.Command, error) {
			return &groupCommand{name: "event", synopsis: "Stream the cluster's events"}, nil
		},
		"event stream": func() (cli.Command, error) { return &EventStreamCommand{Meta: m}, nil },
		"node": func() (cli.Command, error) {
			return &groupCommand{name: "node", synopsis: "Inspect client nodes and their GPUs"}, nil
		},
		"node status":      func() (cli.Command, error) { return &NodeStatusCommand{Meta: m}, nil },
		"node eligibility": func() (cli.Command, error) { return &NodeEligibilityCommand{Meta: m}, nil },
		"alloc": func() (cli.Command, error) {
			return &groupCommand{name: "alloc", synopsis: "Inspect allocations, their logs and files, and run commands in them"}, nil
		},
		"alloc status":  func() (cli.Command, error) { return &AllocStatusCommand{Meta: m}, nil },
		"alloc logs":    func() (cli.Command, error) { return &AllocLogsCommand{Meta: m}, nil },
		"alloc stop":    func() (cli.Command, error) { return &AllocStopCommand{Meta: m}, nil },
		"alloc restart": func() (cli.Command, error) { return &AllocRestartCommand{Meta: m}, nil },
		"alloc signal":  func() (cli.Command, error) { return &AllocSignalCommand{Meta: m}, nil },
		"alloc exec":    func() (cli.Command, error) { return &AllocExecCommand{Meta: m}, nil },
		"alloc fs":      func() (cli.Command, error) { return &AllocFSCommand{Meta: m}, nil },
		"alloc fs ls":   func() (cli.Command, error) { return &AllocFSListCommand{Meta: m}, nil },
		"alloc fs cat":  func() (cli.Command, error) { return &AllocFSCatCommand{Meta: m}, nil },
		"alloc fs stat": func() (cli.Command, error) { return &AllocFSStatCommand{Meta: m}, nil },
		"sim":           func() (cli.Command, error) { return &SimCommand{Meta: m}, nil },
		"monitor":       func() (cli.Command, error) { return &MonitorCommand{Meta: m}, nil },
		"version":       func() (cli.Command, error) { return &VersionCommand{Meta: m}, nil },

		"operator": func() (cli.Command, error) {
			return &groupCommand{name: "operator", synopsis: "Cluster-wide settings for operators"}, nil
		},
		"system": func() (cli.Command, error) {
			return &groupCommand{name: "system", synopsis: "Cluster maintenance"}, nil
		},
		"system gc":      func() (cli.Command, error) { return &SystemGCCommand{Meta: m}, nil },
		"operator debug": func() (cli.Command, error) { return &OperatorDebugCommand{Meta: m}, nil },
		"operator scheduler": func() (cli.Command, error) {
			return &groupCommand{name: "operator scheduler", synopsis: "Read and change the scheduler configuration"}, nil
		},
		"operator scheduler get-config": func() (cli.Command, error) { return &OperatorSchedulerGetConfigCommand{Meta: m}, nil },
		"operator scheduler set-config": func() (cli.Command, error) { return &OperatorSchedulerSetConfigCommand{Meta: m}, nil },

		"namespace": func() (cli.Command, error) {
			return &groupCommand{name: "namespace", synopsis: "Create, inspect and delete namespaces"}, nil
		},
		"namespace apply":  func() (cli.Command, error) { return &NamespaceApplyCommand{Meta: m}, nil },
		"namespace list":   func() (cli.Command, error) { return &NamespaceListCommand{Meta: m}, nil },
		"namespace status": func() (cli.Command, error) { return &NamespaceStatusCommand{Meta: m}, nil },
		"namespace delete": func() (cli.Command, error) { return &NamespaceDeleteCommand{Meta: m}, nil },
		"acl": func() (cli.Command, error) {
			return &groupCommand{name: "acl", synopsis: "Bootstrap ACLs; manage ACL policies and tokens"}, nil
		},
		"acl bootstrap": func() (cli.Command, error) { return &ACLBootstrapCommand{Meta: m}, nil },
		"acl policy": func() (cli.Command, error) {
			return &groupCommand{name: "acl policy", synopsis: "Create, inspect and delete ACL policies"}, nil
		},
		"acl policy apply":  func() (cli.Command, error) { return &ACLPolicyApplyCommand{Meta: m}, nil },
		"acl policy list":   func() (cli.Command, error) { return &ACLPolicyListCommand{Meta: m}, nil },
		"acl policy info":   func() (cli.Command, error) { return &ACLPolicyInfoCommand{Meta: m}, nil },
		"acl policy delete": func() (cli.Command, error) { return &ACLPolicyDeleteCommand{Meta: m}, nil },
		"acl token": func() (cli.Command, error) {
			return &groupCommand{name: "acl token", synopsis: "Create, inspect, update and delete ACL tokens"}, nil
		},
		"acl token create": func() (cli.Command, error) { return &ACLTokenCreateCommand{Meta: m}, nil },
		"acl token list":   func() (cli.Command, error) { return &ACLTokenListCommand{Meta: m}, nil },
		"acl token info":   func() (cli.Command, error) { return &ACLTokenInfoCommand{Meta: m}, nil },
		"acl token self": func() (cli.Command, error) {
			return &ACLTokenSelfCommand{ACLTokenInfoCommand{Meta: m}}, nil
		},
		"acl token update": func() (cli.Command, error) { return &ACLTokenUpdateCommand{Meta: m}, nil },
		"acl token delete": func() (cli.Command, error) { return &ACLTokenDeleteCommand{Meta: m}, nil },
		"quota": func() (cli.Command, error) {
			return &groupCommand{name: "quota", synopsis: "Cap what namespaces' allocations hold: GPUs, GPU memory, cpu, memory"}, nil
		},
		"quota apply":  func() (cli.Command, error) { return &QuotaApplyCommand{Meta: m}, nil },
		"quota list":   func() (cli.Command, error) { return &QuotaListCommand{Meta: m}, nil },
		"quota status": func() (cli.Command, error) { return &QuotaStatusCommand{Meta: m}, nil },
		"quota delete": func() (cli.Command, error) { return &QuotaDeleteCommand{Meta: m}, nil },
		"queue": func() (cli.Command, error) {
			return &groupCommand{name: "queue", synopsis: "Create, inspect and delete fair-share queues"}, nil
		},
		"queue apply":  func() (cli.Command, error) { return &QueueApplyCommand{Meta: m}, nil },
		"queue list":   func() (cli.Command, error) { return &QueueListCommand{Meta: m}, nil },
		"queue status": func() (cli.Command, error) { return &QueueStatusCommand{Meta: m}, nil },
		"queue delete": func() (cli.Command, error) { return &QueueDeleteCommand{Meta: m}, nil },
		"service": func() (cli.Command, error) {
			return &groupCommand{name: "service", synopsis: "Inspect services in the built-in service registry"}, nil
		},
		"service list":   func() (cli.Command, error) { return &ServiceListCommand{Meta: m}, nil },
		"service info":   func() (cli.Command, error) { return &ServiceInfoCommand{Meta: m}, nil },
		"service delete": func() (cli.Command, error) { return &ServiceDeleteCommand{Meta: m}, nil },
		"scaling": func() (cli.Command, error) {
			return &groupCommand{name: "scaling", synopsis: "Inspect the groups' scaling policies"}, nil
		},
		"scaling policy": func() (cli.Command, error) {
			return &groupCommand{name: "scaling policy", synopsis: "List and show scaling policies"}, nil
		},
		"scaling policy list": func() (cli.Command, error) { return &ScalingPolicyListCommand{Meta: m}, nil },
		"scaling policy info": func() (cli.Command, error) { return &ScalingPolicyInfoCommand{Meta: m}, nil },

		// Variables and their root keyring (var.go, operator_root_keyring.go).
		"var": func() (cli.Command, error) {
			return &groupCommand{name: "var", synopsis: "Create, read, list and purge variables"}, nil
		},
		"var put":   func() (cli.Command, error) { return &VarPutCommand{Meta: m}, nil },
		"var get":   func() (cli.Command, error) { return &VarGetCommand{Meta: m}, nil },
		"var list":  func() (cli.Command, error) { return &VarListCommand{Meta: m}, nil },
		"var purge": func() (cli.Command, error) { return &VarPurgeCommand{Meta: m}, nil },
		"operator root": func() (cli.Command, error) {
			return &groupCommand{name: "operator root", synopsis: "Manage the variables' root keyring"}, nil
		},
		"operator root keyring": func() (cli.Command, error) {
			return &groupCommand{name: "operator root keyring", synopsis: "Rotate and list the variables' root keys"}, nil
		},
		"operator root keyring rotate": func() (cli.Command, error) { return &OperatorRootKeyringRotateCommand{Meta: m}, nil },
		"operator root keyring list":   func() (cli.Command, error) { return &OperatorRootKeyringListCommand{Meta: m}, nil },

		"operator raft": func() (cli.Command, error) {
			return &groupCommand{name: "operator raft", synopsis: "Inspect and change the Raft configuration"}, nil
		},
		"operator raft list-peers":  func() (cli.Command, error) { return &OperatorRaftListPeersCommand{Meta: m}, nil },
		"operator raft remove-peer": func() (cli.Command, error) { return &OperatorRaftRemovePeerCommand{Meta: m}, nil },
		"server": func() (cli.Command, error) {
			return &groupCommand{name: "server", synopsis: "Join, list and remove servers"}, nil
		},
		"server members":     func() (cli.Command, error) { return &ServerMembersCommand{Meta: m}, nil },
		"server join":        func() (cli.Command, error) { return &ServerJoinCommand{Meta: m}, nil },
		"server force-leave": func() (cli.Command, error) { return &ServerForceLeaveCommand{Meta: m}, nil },
		"operator snapshot": func() (cli.Command, error) {
			return &groupCommand{name: "operator snapshot", synopsis: "Save, restore and inspect snapshots of the cluster's state"}, nil
		},
		"operator snapshot save":    func() (cli.Command, error) { return &OperatorSnapshotSaveCommand{Meta: m}, nil },
		"operator snapshot restore": func() (cli.Command, error) { return &OperatorSnapshotRestoreCommand{Meta: m}, nil },
		"operator snapshot inspect": func() (cli.Command, error) { return &OperatorSnapshotInspectCommand{Meta: m}, nil },
		"operator gossip": func() (cli.Command, error) {
			return &groupCommand{name: "operator gossip", synopsis: "Manage the servers' gossip encryption"}, nil
		},
		"operator gossip keyring": func() (cli.Command, error) { return &OperatorGossipKeyringCommand{Meta: m}, nil },
		"tls": func() (cli.Command, error) {
			return &groupCommand{name: "tls", synopsis: "Create a CA and certificates for agent TLS"}, nil
		},
		"tls ca": func() (cli.Command, error) {
			return &groupCommand{name: "tls ca", synopsis: "Create the certificate authority"}, nil
		},
		"tls ca create": func() (cli.Command, error) { return &TLSCACreateCommand{Meta: m}, nil },
		"tls cert": func() (cli.Command, error) {
			return &groupCommand{name: "tls cert", synopsis: "Create server, client and CLI certificates"}, nil
		},
		"tls cert create": func() (cli.Command, error) { return &TLSCertCreateCommand{Meta: m}, nil },
	}
}

// groupCommand is a parent such as `drover job`: it only shows help.
type groupCommand struct{ name, synopsis string }

func (c *groupCommand) Synopsis() string { return c.synopsis }

func (c *groupCommand) Help() string {
	return fmt.Sprintf("Usage: drover %s <subcommand> [options] [args]\n\n  %s.", c.name, c.synopsis)
}

func (c *groupCommand) Run(args []string) int { return cli.RunResultHelp }

// VersionCommand is `drover version`.
type VersionCommand struct{ Meta }

func (c *VersionCommand) Synopsis() string { return "Print the Drover version" }
func (c *VersionCommand) Help() string {
	return "Usage: drover version\n\n  Prints the version of this binary."
}

func (c *VersionCommand) Run(args []string) int {
	c.Ui.Output(versionString())
	return 0
}

func versionString() string { return "Drover v" + structs.Version }

// lineWriter turns the many small writes of cli's help output into whole
// lines for a Ui, which adds a newline to every message.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		w.emit(string(w.buf[:i]))
		w.buf = append(w.buf[:0], w.buf[i+1:]...)
	}
	return len(p), nil
}

// flush emits a last line that has no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = w.buf[:0]
	}
}
