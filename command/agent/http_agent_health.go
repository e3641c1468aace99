package agent

import (
	"net/http"
)

// agentHealth is Nomad's AgentHealth: whether one role of the agent
// works, and why not.
type agentHealth struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// agentHealthBody is Nomad's AgentHealthResponse: a part for each role
// the agent runs.
type agentHealthBody struct {
	Client *agentHealth `json:"client,omitempty"`
	Server *agentHealth `json:"server,omitempty"`
}

// routeAgentHealth adds Nomad's GET /v1/agent/health, for load balancers
// and supervisors: no token needed, as in Nomad (it tells only whether
// the agent works).
func (h *httpAPI) routeAgentHealth(m *routeMux) {
	m.HandleFunc("GET /v1/agent/health", h.wrap(h.agentHealth))
}

// agentHealth answers 200 when the server knows a leader and the client
// knows a server, else 500 with the same body saying which is not.
func (h *httpAPI) agentHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	stats, _ := h.b.Self()["stats"].(map[string]map[string]string)
	var body agentHealthBody
	ok := true
	if server, runs := stats["nomad"]; runs {
		body.Server = &agentHealth{OK: server["leader_addr"] != "", Message: "ok"}
		if !body.Server.OK {
			body.Server.Message, ok = "No cluster leader", false
		}
	}
	if client, runs := stats["client"]; runs {
		body.Client = &agentHealth{OK: client["known_servers"] != "", Message: "ok"}
		if !body.Client.OK {
			body.Client.Message, ok = "No known servers", false
		}
	}
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
	}
	return &body, nil
}
