package structs

// RPC methods of the Keyring endpoint: the servers' gossip encryption
// keys, changed on every server through serf.
const (
	RPCKeyringList    = "Keyring.List"
	RPCKeyringInstall = "Keyring.Install"
	RPCKeyringUse     = "Keyring.Use"
	RPCKeyringRemove  = "Keyring.Remove"
)

// KeyringRequest names a gossip key (base64) to install, use or remove;
// List ignores it.
type KeyringRequest struct {
	Key string
	WriteRequest
}

// KeyringResponse is Nomad's /v1/agent/keyring answer: each key (base64)
// with how many servers hold it, the servers asked, and any server's
// message (an error) by name.
type KeyringResponse struct {
	Messages map[string]string
	Keys     map[string]int
	NumNodes int
}
