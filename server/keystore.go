package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/droverhq/drover/structs"
)

// rootKeySize is an AES-256 key's size in bytes.
const rootKeySize = 32

// rootKeyAlgorithm names the cipher of root keys, as Nomad does.
const rootKeyAlgorithm = "aes256-gcm"

// maxKeystoreFile bounds a keystore file read at start.
const maxKeystoreFile = 4 << 10

// validKeyID is the shape of a root key ID (a UUID): it names a file.
var validKeyID = regexp.MustCompile(`^[a-f0-9-]{36}$`)

// keystore holds this server's root keys: in memory, and in its keystore
// directory (<data dir>/keystore/<key id>.json, mode 0600), where they
// outlive restarts. Raft holds only their metadata; servers that miss a
// key fetch it from another server (variables_keys.go).
type keystore struct {
	dir  string
	mu   sync.RWMutex
	keys map[string]*structs.RootKey
}

// openKeystore loads the keys in dir, creating it (0700) if needed.
func openKeystore(dir string) (*keystore, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	ks := &keystore{dir: dir, keys: map[string]*structs.RootKey{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validKeyID.MatchString(id) {
			continue
		}
		k, err := readKeyFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("keystore: %w", err)
		}
		if k.Meta.KeyID != id {
			return nil, fmt.Errorf("keystore: %s holds key %s", e.Name(), k.Meta.KeyID)
		}
		ks.keys[id] = k
	}
	return ks, nil
}

func readKeyFile(path string) (*structs.RootKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var k structs.RootKey
	dec := json.NewDecoder(&limitedReader{r: f, n: maxKeystoreFile})
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkRootKey(&k, ""); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &k, nil
}

// limitedReader fails a read past n bytes rather than truncating.
type limitedReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errors.New("file too large")
	}
	if len(p) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= n
	return n, err
}

// checkRootKey refuses a key that is not a well-formed AES-256 key (with
// ID id, when id is set).
func checkRootKey(k *structs.RootKey, id string) error {
	switch {
	case k == nil || k.Meta == nil:
		return errors.New("root key: missing metadata")
	case !validKeyID.MatchString(k.Meta.KeyID):
		return fmt.Errorf("root key: invalid ID %q", k.Meta.KeyID)
	case id != "" && k.Meta.KeyID != id:
		return fmt.Errorf("root key: got %s, want %s", k.Meta.KeyID, id)
	case len(k.Key) != rootKeySize:
		return fmt.Errorf("root key %s: %d bytes, want %d", k.Meta.KeyID, len(k.Key), rootKeySize)
	}
	return nil
}

// get returns the key id, or nil.
func (ks *keystore) get(id string) *structs.RootKey {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	return ks.keys[id]
}

// add writes k to its file (atomically, 0600) and keeps it.
func (ks *keystore) add(k *structs.RootKey) error {
	if err := checkRootKey(k, ""); err != nil {
		return err
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if _, ok := ks.keys[k.Meta.KeyID]; ok {
		return nil
	}
	buf, err := json.Marshal(k)
	if err != nil {
		return fmt.Errorf("encode root key: %w", err)
	}
	path := filepath.Join(ks.dir, k.Meta.KeyID+".json")
	tmp, err := os.CreateTemp(ks.dir, ".key-*")
	if err != nil {
		return fmt.Errorf("write root key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write root key: %w", err)
	}
	if _, err := tmp.Write(buf); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write root key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write root key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write root key: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write root key: %w", err)
	}
	ks.keys[k.Meta.KeyID] = k
	return nil
}

// newRootKey returns a fresh random key with metadata meta.
func newRootKey(meta *structs.RootKeyMeta) (*structs.RootKey, error) {
	key := make([]byte, rootKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate root key: %w", err)
	}
	return &structs.RootKey{Meta: meta, Key: key}, nil
}

// variableAAD binds a sealed variable to its namespace and path, so that
// ciphertext moved to another variable does not open.
func variableAAD(ns, path string) []byte { return []byte(ns + "\x00" + path) }

// seal encrypts plain under key with AES-256-GCM and a random nonce.
func seal(key, plain, aad []byte) (nonce, sealed []byte, err error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, nil, err
	}
	nonce = make([]byte, gcm.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, fmt.Errorf("seal: %w", err)
	}
	return nonce, gcm.Seal(nil, nonce, plain, aad), nil
}

// openSealed decrypts what seal sealed.
func openSealed(key, nonce, sealed, aad []byte) ([]byte, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	if len(nonce) != gcm.NonceSize() {
		return nil, errors.New("open: bad nonce")
	}
	plain, err := gcm.Open(nil, nonce, sealed, aad)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return plain, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cipher: %w", err)
	}
	return cipher.NewGCM(block)
}
