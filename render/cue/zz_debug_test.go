package cue

import (
	"fmt"
	"testing"
)

func TestZZDebug(t *testing.T) {
	syn := newSynthetic(10000)
	s := New()
	for i, doc := range syn.docs {
		s.ValidateJSON(syn.typeURLs[i], doc)
	}
	withFastSchema(func(c *schemaCache) {
		for _, l := range c.leaves {
			if len(l.verdicts) > 5 {
				fmt.Println(len(l.verdicts), l.pass != nil, l.expr)
			}
		}
	})
}
