package revisions

import "context"

// Drain applies the queued proxy events synchronously, as Run would.
func Drain(e *Engine) { e.drain(context.Background()) }
