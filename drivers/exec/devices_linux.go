package exec

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The devices an isolated task may use, enforced by its device cgroup
// (v1: devices.deny and devices.allow; v2: an eBPF program attached to
// the cgroup, as the kernel offers nothing else there) and offered in
// its /dev: the standard ones, terminals, and the NVIDIA nodes of its
// assigned GPUs.

// deviceRule admits character device major:minor (minor -1: any) for
// access, a subset of "rwm".
type deviceRule struct {
	major, minor int64
	access       string
}

func (r deviceRule) String() string {
	minor := "*"
	if r.minor >= 0 {
		minor = strconv.FormatInt(r.minor, 10)
	}
	return fmt.Sprintf("c %d:%s %s", r.major, minor, r.access)
}

// standardDevices are the /dev nodes every task gets (bound from the
// host) and their rules; terminals (/dev/ptmx, /dev/pts/*) come from
// the task's own devpts.
var standardDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

var standardRules = []deviceRule{
	{1, 3, "rwm"}, {1, 5, "rwm"}, {1, 7, "rwm"}, {1, 8, "rwm"}, {1, 9, "rwm"}, // null zero full random urandom
	{5, 0, "rwm"}, {5, 2, "rwm"}, {136, -1, "rwm"}, // tty, ptmx, pts
}

// nvidiaProcDir lists the host's NVIDIA GPUs, one directory each with an
// "information" file naming its UUID and its /dev/nvidia<minor>.
const nvidiaProcDir = "/proc/driver/nvidia/gpus"

// nvidiaShared are the nodes every CUDA process opens besides its GPUs'.
var nvidiaShared = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}

// gpuDevices returns the host device nodes of the GPUs with the given
// UUIDs, and the shared NVIDIA nodes when there is any. IDs the host's
// driver does not know (simulated GPUs, MIG instances) have none.
func gpuDevices(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	infos, _ := filepath.Glob(filepath.Join(nvidiaProcDir, "*", "information"))
	var out []string
	for _, p := range infos {
		uuid, minor, ok := readGPUInformation(p)
		if ok && want[uuid] {
			out = append(out, fmt.Sprintf("/dev/nvidia%d", minor))
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, p := range nvidiaShared {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// readGPUInformation reads "GPU UUID:" and "Device Minor:" from a
// /proc/driver/nvidia/gpus/<bus>/information file.
func readGPUInformation(path string) (uuid string, minor int, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	minor = -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		switch strings.TrimSpace(k) {
		case "GPU UUID":
			uuid = strings.TrimSpace(v)
		case "Device Minor":
			minor, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return uuid, minor, uuid != "" && minor >= 0
}

// deviceRules are the rules for a task given the extra host device
// nodes (its GPUs') it gets: the standard ones and one per node.
func deviceRules(extra []string) ([]deviceRule, error) {
	rules := append([]deviceRule(nil), standardRules...)
	for _, p := range extra {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, fmt.Errorf("device %s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return nil, fmt.Errorf("device %s: not a character device", p)
		}
		rules = append(rules, deviceRule{int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev)), "rw"})
	}
	return rules, nil
}

// applyV1Devices denies every device to the v1 devices cgroup dir, then
// allows rules.
func applyV1Devices(dir string, rules []deviceRule) error {
	if err := writeFile(filepath.Join(dir, "devices.deny"), "a"); err != nil {
		return err
	}
	for _, r := range rules {
		if err := writeFile(filepath.Join(dir, "devices.allow"), r.String()); err != nil {
			return err
		}
	}
	return nil
}

// eBPF instruction encoding (linux/bpf.h, linux/bpf_common.h).
const (
	bpfLdxMemW  = 0x61 // dst = *(u32 *)(src + off)
	bpfAndK     = 0x57 // dst &= imm (64-bit)
	bpfRshK     = 0x77 // dst >>= imm
	bpfMovK     = 0xb7 // dst = imm
	bpfMovX     = 0xbf // dst = src
	bpfJneK     = 0x55 // if dst != imm: pc += off
	bpfExit     = 0x95
	bpfDevChar  = 2 // BPF_DEVCG_DEV_CHAR
	bpfAccMknod = 1 // BPF_DEVCG_ACC_MKNOD
	bpfAccRead  = 2
	bpfAccWrite = 4
)

type bpfInsn struct {
	code     uint8
	dst, src uint8
	off      int16
	imm      int32
}

// deviceProgram compiles rules into a BPF_PROG_TYPE_CGROUP_DEVICE
// program: it returns 1 (allow) for an access a rule admits, else 0.
// Its context is struct bpf_cgroup_dev_ctx {u32 access_type (access<<16
// | type); u32 major; u32 minor}.
func deviceProgram(rules []deviceRule) []bpfInsn {
	prog := []bpfInsn{
		{code: bpfLdxMemW, dst: 2, src: 1, off: 0}, // r2 = access_type
		{code: bpfAndK, dst: 2, imm: 0xffff},       // r2 = type
		{code: bpfLdxMemW, dst: 3, src: 1, off: 0}, // r3 = access_type
		{code: bpfRshK, dst: 3, imm: 16},           // r3 = access
		{code: bpfLdxMemW, dst: 4, src: 1, off: 4}, // r4 = major
		{code: bpfLdxMemW, dst: 5, src: 1, off: 8}, // r5 = minor
	}
	for _, r := range rules {
		var allowed int32
		for _, c := range r.access {
			switch c {
			case 'r':
				allowed |= bpfAccRead
			case 'w':
				allowed |= bpfAccWrite
			case 'm':
				allowed |= bpfAccMknod
			}
		}
		block := []bpfInsn{
			{code: bpfJneK, dst: 2, imm: bpfDevChar},
			{code: bpfJneK, dst: 4, imm: int32(r.major)},
		}
		if r.minor >= 0 {
			block = append(block, bpfInsn{code: bpfJneK, dst: 5, imm: int32(r.minor)})
		}
		block = append(block,
			bpfInsn{code: bpfMovX, dst: 1, src: 3},                                                   // r1 = access
			bpfInsn{code: bpfAndK, dst: 1, imm: (bpfAccMknod | bpfAccRead | bpfAccWrite) &^ allowed}, // what is not admitted
			bpfInsn{code: bpfJneK, dst: 1, imm: 0},
			bpfInsn{code: bpfMovK, dst: 0, imm: 1},
			bpfInsn{code: bpfExit},
		)
		for i := range block {
			if block[i].code == bpfJneK {
				block[i].off = int16(len(block) - 1 - i) // to the next rule
			}
		}
		prog = append(prog, block...)
	}
	return append(prog, bpfInsn{code: bpfMovK, dst: 0, imm: 0}, bpfInsn{code: bpfExit})
}

func encodeProgram(prog []bpfInsn) []byte {
	buf := make([]byte, 8*len(prog))
	for i, in := range prog {
		b := buf[8*i:]
		b[0] = in.code
		b[1] = in.dst&0xf | in.src<<4
		binary.LittleEndian.PutUint16(b[2:], uint16(in.off))
		binary.LittleEndian.PutUint32(b[4:], uint32(in.imm))
	}
	return buf
}

// attachV2Devices loads the rules' program and attaches it to the v2
// cgroup dir; it stays attached until the cgroup is removed.
func attachV2Devices(dir string, rules []deviceRule) error {
	code := encodeProgram(deviceProgram(rules))
	// Loaded without the verifier's log first: a log that outgrows its
	// buffer fails the load itself (ENOSPC), as a task with a GPU's
	// rules did on a real GPU host. The log is asked for only to explain
	// a refusal.
	fd, err := loadDeviceProgram(code, 0)
	if err != nil {
		if _, detail := loadDeviceProgram(code, 1<<20); detail != nil {
			err = detail
		}
		return err
	}
	defer unix.Close(fd)
	cg, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	defer unix.Close(cg)
	attach := struct {
		targetFD, attachBPFFD, attachType, attachFlags, replaceBPFFD uint32
	}{targetFD: uint32(cg), attachBPFFD: uint32(fd), attachType: unix.BPF_CGROUP_DEVICE}
	if _, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_ATTACH, uintptr(unsafe.Pointer(&attach)), unsafe.Sizeof(attach)); errno != 0 {
		return fmt.Errorf("attach device filter to %s: %w", dir, errno)
	}
	return nil
}

// loadDeviceProgram loads a device program and returns its fd; with
// logSize > 0 the verifier's log (up to logSize bytes) is in the error.
func loadDeviceProgram(code []byte, logSize int) (int, error) {
	license := []byte("Apache-2.0\x00")
	var logBuf []byte
	var logLevel uint32
	var logPtr uint64
	if logSize > 0 {
		logBuf = make([]byte, logSize)
		logLevel, logPtr = 1, uint64(uintptr(unsafe.Pointer(&logBuf[0])))
	}
	load := struct {
		progType, insnCnt uint32
		insns, license    uint64
		logLevel, logSize uint32
		logBuf            uint64
		kernVersion       uint32
		progFlags         uint32
		progName          [16]byte
		progIfindex       uint32
		expectedAttach    uint32
	}{
		progType: unix.BPF_PROG_TYPE_CGROUP_DEVICE, insnCnt: uint32(len(code) / 8),
		insns: uint64(uintptr(unsafe.Pointer(&code[0]))), license: uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel: logLevel, logSize: uint32(len(logBuf)), logBuf: logPtr,
		expectedAttach: unix.BPF_CGROUP_DEVICE,
	}
	copy(load.progName[:], "drover_devices")
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&load)), unsafe.Sizeof(load))
	runtime.KeepAlive(code)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	if errno != 0 {
		if logSize == 0 {
			return -1, fmt.Errorf("load device filter: %w", errno)
		}
		return -1, fmt.Errorf("load device filter: %w: %s", errno, strings.TrimRight(string(logBuf), "\x00"))
	}
	return int(fd), nil
}
