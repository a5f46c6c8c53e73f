package marketplace

import (
	"context"
	"strings"
	"time"

	"slipway/internal/platform/actor"
	"slipway/internal/platform/apperr"
	"slipway/internal/platform/db"
	"slipway/internal/platform/text"
)

// Rating is a person's rating of an item.
type Rating struct {
	Stars     int       `json:"stars" minimum:"1" maximum:"5"`
	Comment   string    `json:"comment"`
	Author    string    `json:"author" doc:"Who rated it (their display name)"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// RatingInput rates an item.
type RatingInput struct {
	Stars   int    `json:"stars" minimum:"1" maximum:"5"`
	Comment string `json:"comment,omitempty" maxLength:"2000"`
}

// RatingPage is a page of an item's ratings, newest first.
type RatingPage struct {
	Items []Rating `json:"items"`
	Total int      `json:"total"`
}

// Rate sets the caller's rating of an item their workspace installed.
func (s *Service) Rate(ctx context.Context, ws *actor.Workspace, u *actor.User, itemID string, in RatingInput) (*Rating, error) {
	it, err := s.Item(ctx, ws, itemID)
	if err != nil {
		return nil, err
	}
	if in.Stars < 1 || in.Stars > 5 {
		return nil, apperr.BadRequest("stars: 1 to 5")
	}
	if err := text.CheckName("comment", strings.ReplaceAll(in.Comment, "\n", " ")); err != nil {
		return nil, err
	}
	var out *Rating
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		inst, err := installOfItem(ctx, tx, ws.ID, it.ID)
		if err != nil {
			return err
		}
		if inst == nil {
			return apperr.New(apperr.CodeForbidden, "rate what your workspace installed: %s is not installed here", it.Slug)
		}
		now := s.Clock.Now()
		if err := saveRating(ctx, tx, it.ID, u.ID, ws.ID, in.Stars, strings.TrimSpace(in.Comment), now); err != nil {
			return err
		}
		if out, err = ratingOf(ctx, tx, it.ID, u.ID); err != nil {
			return err
		}
		return recount(ctx, tx, it.ID)
	})
	return out, err
}

// Unrate removes the caller's rating of an item.
func (s *Service) Unrate(ctx context.Context, ws *actor.Workspace, u *actor.User, itemID string) (bool, error) {
	it, err := s.Item(ctx, ws, itemID)
	if err != nil {
		return false, err
	}
	var removed bool
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if removed, err = deleteRating(ctx, tx, it.ID, u.ID); err != nil || !removed {
			return err
		}
		return recount(ctx, tx, it.ID)
	})
	return removed, err
}

// MyRating is the caller's rating of an item (nil when none).
func (s *Service) MyRating(ctx context.Context, ws *actor.Workspace, u *actor.User, itemID string) (*Rating, error) {
	it, err := s.Item(ctx, ws, itemID)
	if err != nil {
		return nil, err
	}
	r, err := ratingOf(ctx, s.DB.R, it.ID, u.ID)
	if e, ok := apperr.As(err); ok && e.Code == apperr.CodeNotFound {
		return nil, nil
	}
	return r, err
}

// Ratings lists an item's ratings, newest first.
func (s *Service) Ratings(ctx context.Context, ws *actor.Workspace, itemID string, limit, offset int) (*RatingPage, error) {
	it, err := s.Item(ctx, ws, itemID)
	if err != nil {
		return nil, err
	}
	limit = min(max(limit, 0), MaxLimit)
	if limit == 0 {
		limit = DefaultLimit
	}
	items, total, err := ratingsOf(ctx, s.DB.R, it.ID, limit, max(offset, 0))
	if err != nil {
		return nil, err
	}
	return &RatingPage{Items: items, Total: total}, nil
}
