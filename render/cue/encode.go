package cue

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// toExpr builds the CUE syntax of a normalized value. Building syntax
// directly is cheaper than cue.Context.Encode's reflection, and writes
// durations as plain numbers of seconds.
func toExpr(v any) ast.Expr {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		elts := make([]ast.Decl, 0, len(keys))
		for _, k := range keys {
			elts = append(elts, &ast.Field{Label: ast.NewString(k), Value: toExpr(x[k])})
		}
		return &ast.StructLit{Elts: elts}
	case []any:
		elts := make([]ast.Expr, len(x))
		for i, e := range x {
			elts[i] = toExpr(e)
		}
		return &ast.ListLit{Elts: elts}
	case string:
		return ast.NewString(x)
	case bool:
		return ast.NewBool(x)
	case seconds:
		return floatLit(float64(x))
	case float64:
		return floatLit(x)
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return &ast.BasicLit{Kind: token.FLOAT, Value: string(x)}
		}
		return &ast.BasicLit{Kind: token.INT, Value: string(x)}
	case int64:
		return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatInt(x, 10)}
	case uint64:
		return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatUint(x, 10)}
	case nil:
		return ast.NewNull()
	}
	return ast.NewNull()
}

func floatLit(f float64) ast.Expr {
	if f == float64(int64(f)) {
		return &ast.BasicLit{Kind: token.INT, Value: strconv.FormatInt(int64(f), 10)}
	}
	return &ast.BasicLit{Kind: token.FLOAT, Value: strconv.FormatFloat(f, 'g', -1, 64)}
}
