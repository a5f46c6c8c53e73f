// Package scoping proves that SQL on a workspace's rows names the
// workspace. It reads the module's Go source (go/ast, go/types for the
// constants), follows every SQL statement from the expression that hands
// it on back to the literals, constants, variables, Sprintf formats,
// db.Where clauses and helper functions it is built from, learns from the
// migrations which tables belong to a workspace, and judges each
// statement's texts (Analyze). TestEveryStatementScoped runs it over
// internal/; the statements that legitimately name no workspace are in
// allowlist.go.
package scoping
