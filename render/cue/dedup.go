package cue

import (
	"encoding/json"
	"strconv"
)

// dedupInfo records how dedupe folded the lists of a value, so that error
// paths into the folded value can be expanded back to every original
// element.
type dedupInfo struct {
	fields map[string]*dedupInfo
	// origin[j] are the original indices of distinct element j.
	origin [][]int
	elems  []*dedupInfo
}

// dedupe folds identical elements of the lists a pure [...X] constraint
// ranges over: X applies to each element on its own, so equal elements
// give equal verdicts. Ten thousand routes that differ only in fields the
// policy does not read become a handful of values to unify.
func dedupe(v any, m *mask) (any, *dedupInfo) {
	if m == nil {
		return v, nil
	}
	switch x := v.(type) {
	case map[string]any:
		if m.list || m.fields == nil {
			return v, nil
		}
		info := &dedupInfo{fields: map[string]*dedupInfo{}}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k], info.fields[k] = dedupe(e, m.fields[k])
		}
		return out, info
	case []any:
		if !m.list {
			return v, nil
		}
		info := &dedupInfo{}
		var out []any
		index := map[string]int{}
		for i, e := range x {
			d, sub := dedupe(e, m.elem)
			key, err := json.Marshal(d)
			if err != nil {
				key = []byte(strconv.Itoa(-1 - i)) // never equal to another element.
			}
			if j, ok := index[string(key)]; ok {
				info.origin[j] = append(info.origin[j], i)
				continue
			}
			index[string(key)] = len(out)
			out = append(out, d)
			info.origin = append(info.origin, []int{i})
			info.elems = append(info.elems, sub)
		}
		return out, info
	}
	return v, nil
}

// expand maps a path into the folded value to the paths of every original
// element it stands for.
func (info *dedupInfo) expand(segs []string) [][]string {
	if info == nil || len(segs) == 0 {
		return [][]string{segs}
	}
	head, rest := segs[0], segs[1:]
	if info.origin != nil {
		j, err := strconv.Atoi(head)
		if err != nil || j < 0 || j >= len(info.origin) {
			return [][]string{segs}
		}
		var out [][]string
		for _, tail := range info.elems[j].expand(rest) {
			for _, i := range info.origin[j] {
				out = append(out, append([]string{strconv.Itoa(i)}, tail...))
			}
		}
		return out
	}
	var out [][]string
	for _, tail := range info.fields[unquoteLabel(head)].expand(rest) {
		out = append(out, append([]string{head}, tail...))
	}
	return out
}
