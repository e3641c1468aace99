package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"

	"github.com/droverhq/drover/structs"
)

// serfKeyringFile (under DataDir) keeps the gossip keys, primary first, as
// serf writes it (a JSON list of base64 keys): keys installed or removed
// with the keyring endpoint survive a restart.
const serfKeyringFile = "serf/keyring"

// setupKeyring gives serf its gossip keyring: the keyring file's keys
// when it exists, else Config.EncryptKey (and the file is written), else
// none (gossip in the clear).
func (s *Server) setupKeyring(conf *serf.Config) error {
	path := filepath.Join(s.config.DataDir, serfKeyringFile)
	keys, err := readKeyringFile(path)
	switch {
	case err == nil:
		if k := s.config.EncryptKey; k != nil && !slices.ContainsFunc(keys, func(x []byte) bool { return string(x) == string(k) }) {
			s.logger.Warn("server.encrypt is not in the gossip keyring file, whose keys are used; change keys with `drover operator gossip keyring`", "file", path)
		}
	case errors.Is(err, fs.ErrNotExist) && s.config.EncryptKey == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		keys = [][]byte{s.config.EncryptKey}
		if err := writeKeyringFile(path, keys); err != nil {
			return err
		}
	default:
		return err
	}
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return fmt.Errorf("gossip keyring %s: %w", path, err)
	}
	conf.MemberlistConfig.Keyring = kr
	conf.KeyringFile = path
	return nil
}

func readKeyringFile(path string) ([][]byte, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var encoded []string
	if err := json.Unmarshal(buf, &encoded); err != nil {
		return nil, fmt.Errorf("gossip keyring %s: %w", path, err)
	}
	if len(encoded) == 0 {
		return nil, fmt.Errorf("gossip keyring %s: no keys", path)
	}
	keys := make([][]byte, len(encoded))
	for i, e := range encoded {
		if keys[i], err = DecodeGossipKey(e); err != nil {
			return nil, fmt.Errorf("gossip keyring %s: %w", path, err)
		}
	}
	return keys, nil
}

func writeKeyringFile(path string, keys [][]byte) error {
	encoded := make([]string, len(keys))
	for i, k := range keys {
		encoded[i] = base64.StdEncoding.EncodeToString(k)
	}
	buf, err := json.MarshalIndent(encoded, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		return fmt.Errorf("write gossip keyring: %w", err)
	}
	return nil
}

// DecodeGossipKey decodes a base64 gossip key and checks its length
// (16, 24 or 32 bytes: AES-128, -192 or -256).
func DecodeGossipKey(key string) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("gossip key is not base64: %w", err)
	}
	if n := len(raw); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("gossip key is %d bytes; want 16, 24 or 32", n)
	}
	return raw, nil
}

// keyringOp runs one keyring operation on every server through serf
// (a query all servers answer) and fills reply with what they said.
func (s *Server) keyringOp(op string, key string, reply *structs.KeyringResponse) error {
	if !s.serf.EncryptionEnabled() {
		return fmt.Errorf("keyring %s: gossip encryption is not enabled (set server.encrypt): %w", op, structs.ErrInvalid)
	}
	km := s.serf.KeyManager()
	var (
		resp *serf.KeyResponse
		err  error
	)
	if op == "list" {
		resp, err = km.ListKeys()
	} else {
		if _, derr := DecodeGossipKey(key); derr != nil {
			return fmt.Errorf("keyring %s: %w: %w", op, structs.ErrInvalid, derr)
		}
		switch op {
		case "install":
			resp, err = km.InstallKey(key)
		case "use":
			resp, err = km.UseKey(key)
		case "remove":
			resp, err = km.RemoveKey(key)
		default:
			return fmt.Errorf("keyring: unknown operation %q: %w", op, structs.ErrInvalid)
		}
	}
	if resp != nil {
		*reply = structs.KeyringResponse{Messages: resp.Messages, Keys: resp.Keys, NumNodes: resp.NumNodes}
	}
	if err == nil {
		return nil
	}
	// Servers that answered with a refusal (removing the primary key,
	// an unknown key) say why; servers that did not answer are
	// unavailable.
	sentinel := structs.ErrUnavailable
	if resp != nil && len(resp.Messages) > 0 {
		sentinel = structs.ErrInvalid
	}
	msgs := ""
	if resp != nil {
		names := make([]string, 0, len(resp.Messages))
		for n := range resp.Messages {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			msgs += fmt.Sprintf("; %s: %s", n, resp.Messages[n])
		}
	}
	return fmt.Errorf("keyring %s: %w: %v%s", op, sentinel, err, msgs)
}
