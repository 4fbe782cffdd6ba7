// Package serveconfig is the configuration of `legate serve`, the home
// without Kubernetes: the schema its YAML file (--config) and its flags
// both spell, loading a file with errors that name the file, line, column
// and field, the checks of every field at once, and what the settings
// become: the source drivers (Git, OCI), the forge reporters, the rollout
// plans and analyses, the xDS TLS files and exposure rule, the webhook
// secrets and the API tokens. It is apart from the home so that the
// command line (cmd/legate) and tooling read the same schema as the
// server without starting one; it runs nothing.
package serveconfig
