package webhook

import (
	"fmt"
	"net"
)

// adminBindAddress reads the admin.bind-address annotation: an IP
// address, as Envoy's socket address wants.
func adminBindAddress(s *Sidecar, name, value string) error {
	if net.ParseIP(value) == nil {
		return fmt.Errorf("annotation %s: %q is not an IP address (Envoy binds its admin interface to one, such as 127.0.0.1)", name, value)
	}
	s.AdminBindAddress = value
	return nil
}

// checkAdminScope refuses an admin interface beyond loopback unless the
// injector allows it: Envoy's admin answers anyone who reaches it, and
// can dump the configuration (with the certificates' details), change
// log levels, drain listeners and stop the proxy, so on a pod address
// every other pod of the cluster could.
func (in Injector) checkAdminScope(ann map[string]string, s Sidecar) error {
	if in.AllowAdminBeyondLoopback || net.ParseIP(s.AdminBindAddress).IsLoopback() {
		return nil
	}
	name := legatePrefix + "admin.bind-address"
	if _, ok := ann[name]; !ok {
		name = marin3rPrefix + "admin.bind-address"
	}
	return fmt.Errorf("annotation %s: %q is not a loopback address: Envoy's admin interface (which can dump the configuration and stop the proxy) stays on 127.0.0.1 or ::1 unless legate's injector is run with --sidecar-allow-admin-beyond-loopback", name, s.AdminBindAddress)
}
