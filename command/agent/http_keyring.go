package agent

import (
	"net/http"

	"github.com/droverhq/drover/structs"
)

// keyringRoutes serve the servers' gossip keyring, Nomad's
// /v1/agent/keyring/{list,install,use,remove}: a server endpoint
// (Keyring.*) that changes every server's keyring through serf, so any
// agent, a client-only one too, answers.
func (h *httpAPI) keyringRoutes(m *routeMux) {
	m.HandleFunc("GET /v1/agent/keyring/list", h.wrap(h.keyringOp(structs.RPCKeyringList)))
	for _, op := range []struct{ path, method string }{
		{"install", structs.RPCKeyringInstall},
		{"use", structs.RPCKeyringUse},
		{"remove", structs.RPCKeyringRemove},
	} {
		m.HandleFunc("PUT /v1/agent/keyring/"+op.path, h.wrap(h.keyringOp(op.method)))
		m.HandleFunc("POST /v1/agent/keyring/"+op.path, h.wrap(h.keyringOp(op.method)))
	}
}

// keyringOp answers {"Messages", "Keys", "NumNodes"}; install, use and
// remove take {"Key": "<base64>"}.
func (h *httpAPI) keyringOp(method string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		o, err := parseQuery(r)
		if err != nil {
			return nil, err
		}
		args := structs.KeyringRequest{WriteRequest: structs.WriteRequest{Region: o.Region}}
		if method != structs.RPCKeyringList {
			if err := h.decodeBody(r, &args); err != nil {
				return nil, err
			}
			if args.Key == "" {
				return nil, errorf(http.StatusBadRequest, "keyring: give the key as {\"Key\": \"<base64>\"}")
			}
		}
		var resp structs.KeyringResponse
		if err := h.rpc(r, method, &args, &resp); err != nil {
			return nil, err
		}
		if resp.Messages == nil {
			resp.Messages = map[string]string{}
		}
		if resp.Keys == nil {
			resp.Keys = map[string]int{}
		}
		return &resp, nil
	}
}
