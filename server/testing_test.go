package server

import (
	"fmt"
	"net"
	"net/rpc"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// testConfig returns a single-server config in a temp dir on a free
// loopback port. DROVER_TEST_LOG=1 sends the logs to stderr.
func testConfig(t *testing.T) *Config {
	t.Helper()
	logger := hclog.NewNullLogger()
	if os.Getenv("DROVER_TEST_LOG") != "" {
		logger = hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: os.Stderr})
	}
	return &Config{
		NodeName:        "server-1",
		DataDir:         t.TempDir(),
		RPCAddr:         &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)},
		SerfAddr:        &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)},
		BootstrapExpect: 1,
		NumSchedulers:   2,
		HeartbeatTTL:    10 * time.Second,
		Logger:          logger,
	}
}

// startServer starts a server with cfg, shuts it down at the end of the
// test, and waits until it leads (when it bootstraps).
func startServer(t *testing.T, cfg *Config) *Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	if cfg.BootstrapExpect == 1 {
		waitFor(t, 10*time.Second, func() (bool, string) {
			return s.IsLeader() && s.broker.Enabled(), "server never became a working leader"
		})
	}
	return s
}

// waitFor polls cond until it holds or timeout passes; cond returns what
// to report on failure.
func waitFor(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dialRPC connects to the server's RPC port as a client does.
func dialRPC(t *testing.T, addr net.Addr) *rpc.Client {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	if _, err := conn.Write([]byte{structs.RPCTypeRPC}); err != nil {
		t.Fatalf("write rpc byte: %v", err)
	}
	c := rpc.NewClientWithCodec(structs.NewRPCClientCodec(conn))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// gpuNode returns a ready raw_exec node with gpus healthy H100s.
func gpuNode(name string, gpus int) *structs.Node {
	var inst []*structs.NodeDevice
	for i := range gpus {
		inst = append(inst, &structs.NodeDevice{
			ID:         fmt.Sprintf("GPU-%s-0000-4000-8000-%012d", name, i),
			Healthy:    true,
			Locality:   &structs.NodeDeviceLocality{PciBusID: fmt.Sprintf("0000:%02x:00.0", i+1)},
			Attributes: map[string]string{structs.DeviceAttrPCIBusID: fmt.Sprintf("0000:%02x:00.0", i+1), structs.DeviceAttrNUMANode: "0"},
		})
	}
	return &structs.Node{
		ID:         structs.GenerateUUID(),
		SecretID:   structs.GenerateUUID(),
		Datacenter: "dc1",
		Name:       name,
		HTTPAddr:   "127.0.0.1:4646",
		Attributes: map[string]string{"kernel.name": "linux", "driver.raw_exec": "1", "unique.hostname": name},
		Drivers:    map[string]*structs.DriverInfo{"raw_exec": {Detected: true, Healthy: true}},
		NodeResources: &structs.NodeResources{
			Cpu:    structs.NodeCpuResources{CpuShares: 16000, TotalCpuCores: 8},
			Memory: structs.NodeMemoryResources{MemoryMB: 65536},
			Devices: []*structs.NodeDeviceResource{{
				Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3", Instances: inst,
				Attributes: map[string]string{
					structs.DeviceAttrMemory: "80 GiB", structs.DeviceAttrComputeCapability: "9.0",
					structs.DeviceAttrSimulated: "true",
				},
			}},
		},
	}
}

// gpuJob returns a job of typ with one group of count allocations, each
// asking for gpus GPUs.
func gpuJob(id, typ string, count, gpus int) *structs.Job {
	job := &structs.Job{
		ID: id, Type: typ, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "train", Count: count,
			Tasks: []*structs.Task{{
				Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/true"},
				Resources: &structs.Resources{CPU: 1000, MemoryMB: 1024,
					Devices: []*structs.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// registerNode registers node over TCP.
func registerNode(t *testing.T, c *rpc.Client, node *structs.Node) *structs.NodeUpdateResponse {
	t.Helper()
	var resp structs.NodeUpdateResponse
	if err := c.Call(structs.RPCNodeRegister, &structs.NodeRegisterRequest{Node: node}, &resp); err != nil {
		t.Fatalf("Node.Register: %v", err)
	}
	return &resp
}

// registerJob registers job in process.
func registerJob(t *testing.T, s *Server, job *structs.Job) *structs.JobRegisterResponse {
	t.Helper()
	var resp structs.JobRegisterResponse
	if err := s.RPC(structs.RPCJobRegister, &structs.JobRegisterRequest{Job: job}, &resp); err != nil {
		t.Fatalf("Job.Register: %v", err)
	}
	return &resp
}

// liveAllocs returns the job's allocations that are not terminal.
func liveAllocs(t *testing.T, s *Server, jobID string) []*structs.Allocation {
	t.Helper()
	all, err := s.State().AllocsByJob(nil, structs.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*structs.Allocation
	for _, a := range all {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// evalByID reads an evaluation or fails.
func evalByID(t *testing.T, s *Server, id string) *structs.Evaluation {
	t.Helper()
	e, err := s.State().EvalByID(nil, id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// allocUpdate is a node's report on its allocations, with the node's ID
// and secret (the node of the first allocation, as stored).
func allocUpdate(t *testing.T, s *Server, allocs []*structs.Allocation) *structs.AllocUpdateRequest {
	t.Helper()
	req := &structs.AllocUpdateRequest{Alloc: allocs}
	for _, a := range allocs {
		if a == nil || a.ID == "" {
			continue
		}
		stored, err := s.State().AllocByID(nil, a.ID)
		if err != nil || stored == nil {
			t.Fatalf("allocUpdate: allocation %s: %v", a.ID, err)
		}
		node, err := s.State().NodeByID(nil, stored.NodeID)
		if err != nil || node == nil {
			t.Fatalf("allocUpdate: node %s: %v", stored.NodeID, err)
		}
		req.NodeID, req.SecretID = node.ID, node.SecretID
		break
	}
	return req
}
