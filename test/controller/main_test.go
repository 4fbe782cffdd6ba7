package controller_test

import (
	"flag"
	"os"
	"testing"
)

// parallel is how many of this package's tests run at once unless
// -test.parallel says otherwise: each test starts an API server of its
// own and mostly waits on it (106 s of CPU over 338 s run one at a time),
// so four at once take a third of the time (docs/testing.md).
const parallel = "4"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", parallel); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
