package cluster

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const portLow, portHigh = 20000, 32768

// portHold is how long a port FreePort handed out stays reserved for its process: long enough for the slowest
// component to bind it. A port still bound after that is skipped because it is in use.
const portHold = 2 * time.Minute

var (
	portMu   sync.Mutex
	nextPort int
)

// FreePort returns a loopback port that is free now, for a process about to listen on it. It is not one the kernel
// hands out itself (that range, 32768-60999 on Linux, is where outgoing connections get their local ports, and one
// of them could take the port before the process binds it): ports are tried from a random point of 20000-32767.
// A port is reserved for portHold across every process on this machine that calls FreePort, so that test binaries
// running side by side do not hand out one port twice while its first component is still starting.
func FreePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	if nextPort == 0 {
		nextPort = portLow + mrand.IntN(portHigh-portLow)
	}
	reservations, err := lockPortReservations()
	if err != nil {
		return 0, err
	}
	defer reservations.unlock()
	for range portHigh - portLow {
		p := nextPort
		if nextPort++; nextPort >= portHigh {
			nextPort = portLow
		}
		if reservations.held(p, time.Now()) {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		if err := reservations.reserve(p); err != nil {
			return 0, err
		}
		return p, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d", portLow, portHigh-1)
}

// portReservations is the machine-wide directory of reserved ports: one file per port, its modification time
// the moment of reservation. Only the holder of the directory's lock reads or writes it.
type portReservations struct {
	dir  string
	lock *os.File
}

func lockPortReservations() (*portReservations, error) {
	dir := filepath.Join(os.TempDir(), "fedmesh-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock port reservations: %w", err)
	}
	return &portReservations{dir: dir, lock: f}, nil
}

func (r *portReservations) unlock() { r.lock.Close() } // closing the file releases the lock

// held reports whether some process reserved port p less than portHold before now.
func (r *portReservations) held(p int, now time.Time) bool {
	info, err := os.Stat(r.path(p))
	return err == nil && now.Sub(info.ModTime()) < portHold
}

func (r *portReservations) reserve(p int) error {
	path := r.path(p)
	now := time.Now()
	if err := os.Chtimes(path, now, now); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, nil, 0o666)
}

func (r *portReservations) path(p int) string { return filepath.Join(r.dir, strconv.Itoa(p)) }
