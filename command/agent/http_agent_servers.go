package agent

import (
	"net/http"
	"strings"

	"github.com/droverhq/drover/acl"
)

// agentServers answers /v1/agent/servers: the RPC addresses of the
// servers this agent's client knows (Nomad's shape, a list of strings).
func (h *httpAPI) agentServers(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.authorizeAgent(r, (*acl.ACL).AllowAgentRead); err != nil {
		return nil, err
	}
	stats, _ := h.b.Self()["stats"].(map[string]map[string]string)
	client, ok := stats["client"]
	if !ok {
		return nil, errorf(http.StatusNotImplemented, "GET /v1/agent/servers: this agent runs no client")
	}
	servers := []string{}
	if known := client["known_servers"]; known != "" {
		servers = strings.Split(known, ",")
	}
	return servers, nil
}
