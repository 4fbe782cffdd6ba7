package standalone

import "time"

// DefaultSecretsInterval is how often the secrets directory is checked for
// changed files.
const DefaultSecretsInterval = 5 * time.Second
