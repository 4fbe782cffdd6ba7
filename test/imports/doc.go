// Package imports holds the test that enforces the import rules of
// ARCHITECTURE.md on the module's package graph: no package except cmd/ and
// test/ imports a home, the homes never import each other, render imports
// no other stage and sources imports no later one. The rules live in a test
// rather than in depguard because a test sees transitive imports: a shared
// package that reaches a home through a third package breaks the rule as
// surely as one that imports it directly. Nothing here ships in the binary.
package imports
