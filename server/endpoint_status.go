package server

// statusEndpoint serves the "Status" RPC methods.
type statusEndpoint struct{ srv *Server }

// Ping answers so a client can check the connection.
func (e *statusEndpoint) Ping(args *struct{}, reply *struct{}) error { return nil }
