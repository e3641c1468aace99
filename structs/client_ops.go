package structs

// Client operations: calls a server routes to the client that runs an
// allocation (or to a named node) over the connection that client keeps
// to the servers, as streaming calls (StreamTypeStreaming). Each request
// names its target with AllocID or NodeID; the server resolves an
// allocation to its node. A unary operation answers one message with
// its reply after the StreamResponse; a streaming one answers
// StreamMsg messages until it ends.
const (
	RPCClientAllocLogs    = "ClientAlloc.Logs"     // ClientLogsRequest -> StreamMsg{Frame}...
	RPCClientAllocStats   = "ClientAlloc.Stats"    // ClientAllocRequest -> AllocStats
	RPCClientAllocRestart = "ClientAlloc.Restart"  // ClientAllocRequest -> GenericResponse
	RPCClientAllocSignal  = "ClientAlloc.Signal"   // ClientAllocRequest -> GenericResponse
	RPCClientAllocExec    = "ClientAlloc.Exec"     // ClientExecRequest <-> StreamMsg
	RPCClientFSList       = "ClientFS.List"        // ClientFSRequest -> []*AllocFileInfo
	RPCClientFSStat       = "ClientFS.Stat"        // ClientFSRequest -> AllocFileInfo
	RPCClientFSReadAt     = "ClientFS.ReadAt"      // ClientFSRequest -> StreamMsg{Data}...
	RPCClientNodeStats    = "ClientNode.Stats"     // ClientNodeRequest -> NodeStats
	RPCClientGPUHealth    = "ClientNode.GPUHealth" // ClientGPUHealthRequest -> GPUHealthResponse

	RPCClientNodeGPUHistory  = "ClientNode.GPUHistory"  // GPUHistoryRequest -> GPUHistoryResponse
	RPCClientAllocGPUHistory = "ClientAlloc.GPUHistory" // GPUHistoryRequest -> GPUHistoryResponse
)

// ClientTarget is the part of every client operation's request that
// routes it; a server decodes only this much.
type ClientTarget struct {
	AllocID string
	NodeID  string
}

// ClientAllocRequest names an allocation, and for restart and signal a
// task ("" is every task) and a signal.
type ClientAllocRequest struct {
	AllocID string
	NodeID  string
	Task    string
	Signal  string
}

// ClientLogsRequest reads a task's log (Nomad's /v1/client/fs/logs).
type ClientLogsRequest struct {
	AllocID string
	NodeID  string
	Task    string
	Stderr  bool
	// Origin is "start" or "end"; Offset counts bytes from it.
	Origin string
	Offset int64
	Follow bool
}

// ClientFSRequest reads a path inside an allocation's directory.
type ClientFSRequest struct {
	AllocID string
	NodeID  string
	Path    string
	Offset  int64
	// Limit is the most bytes ReadAt returns; <= 0 reads to the end.
	Limit int64
}

// ClientExecRequest runs a command in a running task.
type ClientExecRequest struct {
	AllocID string
	NodeID  string
	Task    string
	Command []string
	TTY     bool
}

// ClientNodeRequest names a node.
type ClientNodeRequest struct {
	AllocID string
	NodeID  string
}

// ClientGPUHealthRequest sets a simulated GPU's health on its node.
type ClientGPUHealthRequest struct {
	AllocID  string
	NodeID   string
	DeviceID string
	Healthy  bool
	Reason   string
}

// GPUHealthResponse answers it: the device and the health it now has.
type GPUHealthResponse struct {
	ID      string
	Healthy bool
	Reason  string
}

// TerminalSize is an exec session's terminal size.
type TerminalSize struct {
	Height, Width uint16
}

// StreamMsg is one message of a streaming client operation. Which
// fields are set depends on the operation and the direction.
type StreamMsg struct {
	// Frame is a chunk of a log (ClientAlloc.Logs).
	Frame *StreamFrame `json:",omitempty"`
	// Data is a chunk of a file (ClientFS.ReadAt).
	Data []byte `json:",omitempty"`

	// Exec, caller to task: input, its end, and terminal resizes.
	Stdin       []byte        `json:",omitempty"`
	StdinClosed bool          `json:",omitempty"`
	TTYSize     *TerminalSize `json:",omitempty"`
	// Exec, task to caller: output, and the command's end.
	Stdout   []byte `json:",omitempty"`
	Stderr   []byte `json:",omitempty"`
	Exited   bool   `json:",omitempty"`
	ExitCode int    `json:",omitempty"`

	// Error ends the operation with an error (EncodeRPCError's text).
	Error string `json:",omitempty"`
}
