package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/legate-dev/legate/bootstrap"
	"github.com/legate-dev/legate/serveconfig"
)

func newBootstrapCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bootstrap",
		Short: "Write the bootstrap that points Envoy or a grpc-go client at legate",
		Example: `  legate bootstrap envoy --node edge > envoy.yaml && envoy -c envoy.yaml
  legate bootstrap grpc --node grpc-client > grpc-bootstrap.json
  GRPC_XDS_BOOTSTRAP=grpc-bootstrap.json go run ./examples/grpc/greeter call`,
	}
	cmd.AddCommand(newBootstrapKindCommand("grpc"), newBootstrapKindCommand("envoy"))
	return cmd
}

func newBootstrapKindCommand(kind string) *cobra.Command {
	var o bootstrap.Options
	var out string
	short, long, example := "grpc-go's xDS bootstrap (JSON) for a node",
		`grpc writes the JSON bootstrap grpc-go's xDS resolver reads from the file
GRPC_XDS_BOOTSTRAP names: legate's ADS address and the node ID the client
speaks for. A client then dials xds:///<listener name>.`,
		`  legate bootstrap grpc --node grpc-client -o grpc-bootstrap.json
  GRPC_XDS_BOOTSTRAP=grpc-bootstrap.json go run ./examples/grpc/greeter call
  # mutual TLS with the files legate pki issue --node wrote
  legate bootstrap grpc --node edge --xds-addr legate.internal:18000 \
    --ca ~/.config/legate/pki/nodes/edge/ca.crt \
    --cert ~/.config/legate/pki/nodes/edge/tls.crt --key ~/.config/legate/pki/nodes/edge/tls.key`
	if kind == "envoy" {
		short, long, example = "an Envoy bootstrap (YAML) for a node",
			`envoy writes an Envoy bootstrap whose listeners and clusters all come from
legate over ADS, for the node ID given.`,
			`  legate bootstrap envoy --node edge -o envoy.yaml
  envoy -c envoy.yaml`
	}
	cmd := &cobra.Command{
		Use: kind, Short: short, Long: long, Example: example,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			gen := bootstrap.GRPC
			if kind == "envoy" {
				gen = bootstrap.Envoy
			}
			data, err := gen(o)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Node, "node", "", "node ID the client speaks for (required)")
	fl.StringVar(&o.XDSAddr, "xds-addr", serveconfig.DefaultXDSAddr, "legate's xDS address, host:port (as --xds-addr of legate serve)")
	fl.StringVar(&o.Pod, "pod", "", "name of this client within the node (node.metadata.pod_name, shown as the proxy's name)")
	fl.StringVar(&o.CAFile, "ca", "", "CA of legate's server certificate: speak TLS")
	fl.StringVar(&o.CertFile, "cert", "", "client certificate for mutual TLS (legate pki issue --node)")
	fl.StringVar(&o.KeyFile, "key", "", "the client certificate's key")
	fl.StringVarP(&out, "output", "o", "", "file to write (default: standard output)")
	_ = cmd.MarkFlagRequired("node")
	return cmd
}
