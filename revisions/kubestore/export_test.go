package kubestore

// SetBeforeUnmark sets the hook an unmarking calls before it takes its
// node's lock, and returns the function that takes it away.
func SetBeforeUnmark(f func(node, hash string)) func() {
	beforeUnmark = f
	return func() { beforeUnmark = nil }
}
