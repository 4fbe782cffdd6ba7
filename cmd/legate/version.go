package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/spf13/cobra"
)

// Set at link time by the Makefile (-X main.version=… -X main.commit=…).
var (
	version = "dev"
	commit  = "unknown"
)

const (
	controlPlaneModule = "github.com/envoyproxy/go-control-plane"
	envoyAPIModule     = "github.com/envoyproxy/go-control-plane/envoy"
)

// versionInfo is what `legate version` reports.
type versionInfo struct {
	Version      string `json:"version"`
	Commit       string `json:"commit"`
	GoVersion    string `json:"goVersion"`
	ControlPlane string `json:"goControlPlane"`
	EnvoyAPI     string `json:"envoyAPI"`
	XDSTypes     int    `json:"xdsTypes"`
}

func currentVersion() versionInfo {
	info := versionInfo{
		Version:      version,
		Commit:       commit,
		GoVersion:    runtime.Version(),
		ControlPlane: "unknown",
		EnvoyAPI:     "unknown",
		XDSTypes:     len(servedTypes),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			v := dep.Version
			if dep.Replace != nil {
				v = dep.Replace.Version
			}
			switch dep.Path {
			case controlPlaneModule:
				info.ControlPlane = v
			case envoyAPIModule:
				// The envoy module is tagged with the Envoy release whose
				// API protos it carries.
				info.EnvoyAPI = "v3 (Envoy " + v + ")"
			}
		}
	}
	return info
}

// servedTypes are the xDS resource types legate serves.
var servedTypes = []string{
	resourcev3.ListenerType,
	resourcev3.RouteType,
	resourcev3.ScopedRouteType,
	resourcev3.VirtualHostType,
	resourcev3.ClusterType,
	resourcev3.EndpointType,
	resourcev3.SecretType,
	resourcev3.RuntimeType,
	resourcev3.ExtensionConfigType,
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use: "version",
		Example: `  legate version
  legate version -o json
  legate --version`,
		Short: "Print legate's version and the versions of the APIs it serves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := currentVersion()
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(info)
			case "text", "":
				fmt.Fprintf(w, "legate %s (commit %s)\n", info.Version, info.Commit)
				fmt.Fprintf(w, "go:               %s\n", info.GoVersion)
				fmt.Fprintf(w, "go-control-plane: %s\n", info.ControlPlane)
				fmt.Fprintf(w, "envoy api:        %s, %d xDS resource types\n", info.EnvoyAPI, info.XDSTypes)
				return nil
			default:
				return fmt.Errorf("--output %q: want text or json", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
