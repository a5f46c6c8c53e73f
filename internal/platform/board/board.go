// Package board holds the shared shape of every /board endpoint (DESIGN §3):
// the query (q, sort, order, page, page_size) and the response (rows, total,
// page, page_size, facets).
package board

import (
	"slices"
	"strings"

	"slipway/internal/platform/apperr"
)

// Query is the shared query of every /board endpoint.
type Query struct {
	Q        string `query:"q" maxLength:"200" doc:"Free-text search"`
	Sort     string `query:"sort" doc:"Sort key; each board lists its own"`
	Order    string `query:"order" enum:"asc,desc" doc:"Sort direction (default: the board's natural order)"`
	Page     int    `query:"page" minimum:"1" default:"1"`
	PageSize int    `query:"page_size" minimum:"1" maximum:"200" default:"50"`
}

// Offset is the number of rows before the page.
func (q Query) Offset() int { return (q.Page - 1) * q.PageSize }

// OrderBy turns sort and order into an ORDER BY expression from a whitelist
// of sort keys to SQL expressions; unknown keys are 400. def is the key used
// when none is given, defOrder its direction. The tie column breaks ties so
// pages are stable.
func (q Query) OrderBy(keys map[string]string, def, defOrder, tie string) (string, error) {
	key := q.Sort
	if key == "" {
		key = def
	}
	expr, ok := keys[key]
	if !ok {
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		return "", apperr.BadRequest("sort must be one of %s", strings.Join(names, ", "))
	}
	order := q.Order
	if order == "" {
		order = defOrder
	}
	dir := " ASC"
	if order == "desc" {
		dir = " DESC"
	}
	return expr + dir + ", " + tie + dir, nil
}

// Facet is one chip of a facet: a value, its label and how many rows have it.
type Facet struct {
	Value string `json:"value"`
	Label string `json:"label"`
	Count int    `json:"count"`
}

// Board is the shared response of every /board endpoint: one page of rows,
// the total and the facet chips.
type Board[T any] struct {
	Rows     []T                `json:"rows"`
	Total    int                `json:"total"`
	Page     int                `json:"page"`
	PageSize int                `json:"page_size"`
	Facets   map[string][]Facet `json:"facets"`
}

// New is the board of one page of rows for the query.
func New[T any](q Query, rows []T, total int, facets map[string][]Facet) *Board[T] {
	if rows == nil {
		rows = []T{}
	}
	return &Board[T]{Rows: rows, Total: total, Page: q.Page, PageSize: q.PageSize, Facets: facets}
}
