package netguard

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen opens a TCP listener on addr for what (xDS, the status API, the
// admission webhooks). When it cannot, the error names setting, the flag
// or config field that chose addr, and when another process holds the
// port (a second legate started by hand, the commonest case) says what to
// do about it.
func Listen(what, addr, setting string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err == nil {
		return lis, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("%s: listen for %s on %s: the address is in use, by another legate or another program: stop it or choose another address: %w", setting, what, addr, err)
	}
	return nil, fmt.Errorf("%s: listen for %s on %s: %w", setting, what, addr, err)
}
