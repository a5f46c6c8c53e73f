package n8nimport

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"slipway/internal/platform/text"
	"slipway/internal/triggers"
)

// webhookTrigger turns a Webhook node into a webhook trigger: the run's
// input is the delivered JSON body and its trigger is {kind, trigger_id,
// body, query, headers}, which is what $json was after the node in n8n.
func (c *converter) webhookTrigger(n *srcNode) {
	p := n.params
	x := c.ctx(n)
	mode := triggers.ModeAsync
	switch rm := str(p, "responseMode", "onReceived"); rm {
	case "responseNode", "lastNode":
		mode = triggers.ModeSync
	case "onReceived":
	default:
		x.warn("its response mode %s is not supported; the webhook answers at once with the run's id", quoted(rm))
	}
	if method := strings.ToUpper(str(p, "httpMethod", "GET")); method != "POST" {
		x.warn("it took %s requests in n8n; the webhook here takes POST with a JSON body (or none), and the query string is in trigger.query", method)
	}
	if auth := str(p, "authentication", "none"); auth != "none" {
		x.warn("its %s authentication is not imported; give the trigger a signing secret instead", auth)
	}
	if str(p, "responseMode", "") == "lastNode" && str(p, "responseData", "firstEntryJson") != "firstEntryJson" {
		x.warn("it answered with %s of the last node in n8n; here it answers with the run's output", str(p, "responseData", ""))
	}
	c.specs = append(c.specs, TriggerSpec{Node: n.name, Input: triggers.CreateInput{Kind: triggers.KindWebhook,
		Config: triggers.Config{ResponseMode: mode}}})
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// scheduleTriggers turns a Schedule Trigger (or the older Cron node) into
// one schedule trigger per rule.
func (c *converter) scheduleTriggers(n *srcNode) {
	x := c.ctx(n)
	var configs []triggers.Config
	if n.typ == typeCron {
		items := list(obj(n.params, "triggerTimes"), "item")
		for _, it := range items {
			configs = append(configs, x.cronItem(it))
		}
	} else {
		rules := list(obj(n.params, "rule"), "interval")
		if _, given := obj(n.params, "rule")["interval"]; !given {
			rules = []map[string]any{{}} // n8n's default: every day at midnight
		}
		for _, r := range rules {
			configs = append(configs, x.scheduleRule(r))
		}
	}
	if len(configs) == 0 {
		x.warn("it has no rule; it was imported as a daily schedule at midnight")
		configs = append(configs, triggers.Config{Cron: "0 0 * * *"})
	}
	tz := ""
	if c.timezone != "" {
		if _, err := time.LoadLocation(c.timezone); err == nil && c.timezone != "Local" && len(c.timezone) <= 100 {
			tz = c.timezone
		} else {
			x.warn("the workflow's time zone %s is not known; its schedule runs in UTC", snippet(c.timezone))
		}
	}
	for _, cfg := range configs {
		if cfg.Cron != "" {
			cfg.Timezone = tz
		}
		c.specs = append(c.specs, TriggerSpec{Node: n.name, Input: triggers.CreateInput{Kind: triggers.KindSchedule, Config: cfg}})
	}
}

// daily is the schedule an unmappable rule falls back to.
func (x *nodeCtx) daily(format string, args ...any) triggers.Config {
	x.warn("%s; it was imported as a daily schedule at midnight", fmt.Sprintf(format, args...))
	return triggers.Config{Cron: "0 0 * * *"}
}

// whole reads a rule's number field as an integer within [lo, hi].
func whole(m map[string]any, key string, def, lo, hi float64) (int, bool) {
	f := num(m, key, def)
	if s, ok := m[key].(string); ok {
		if _, err := fmt.Sscan(s, &f); err != nil {
			return 0, false
		}
	}
	if f != float64(int(f)) || f < lo || f > hi {
		return 0, false
	}
	return int(f), true
}

// scheduleRule is one rule of a Schedule Trigger.
func (x *nodeCtx) scheduleRule(r map[string]any) triggers.Config {
	field := str(r, "field", "days")
	minute, okM := whole(r, "triggerAtMinute", 0, 0, 59)
	hour, okH := whole(r, "triggerAtHour", 0, 0, 23)
	if !okM || !okH {
		return x.daily("its rule's time of day is not a valid hour and minute")
	}
	switch field {
	case "seconds":
		s, ok := whole(r, "secondsInterval", 30, 1, 31622400)
		if !ok {
			return x.daily("its interval in seconds is not usable")
		}
		return triggers.Config{IntervalSeconds: int64(s)}
	case "minutes":
		m, ok := whole(r, "minutesInterval", 5, 1, 527040)
		if !ok {
			return x.daily("its interval in minutes is not usable")
		}
		if m < 60 && 60%m == 0 {
			return triggers.Config{Cron: fmt.Sprintf("*/%d * * * *", m)}
		}
		return triggers.Config{IntervalSeconds: int64(m) * 60}
	case "hours":
		h, ok := whole(r, "hoursInterval", 1, 1, 8784)
		if !ok {
			return x.daily("its interval in hours is not usable")
		}
		if h <= 23 {
			return triggers.Config{Cron: fmt.Sprintf("%d */%d * * *", minute, h)}
		}
		return triggers.Config{IntervalSeconds: int64(h) * 3600}
	case "days":
		d, ok := whole(r, "daysInterval", 1, 1, 366)
		if !ok {
			return x.daily("its interval in days is not usable")
		}
		if d == 1 {
			return triggers.Config{Cron: fmt.Sprintf("%d %d * * *", minute, hour)}
		}
		if d <= 31 {
			return triggers.Config{Cron: fmt.Sprintf("%d %d */%d * *", minute, hour, d)}
		}
		return triggers.Config{IntervalSeconds: int64(d) * 86400}
	case "weeks":
		w, ok := whole(r, "weeksInterval", 1, 1, 52)
		if !ok {
			return x.daily("its interval in weeks is not usable")
		}
		days := []string{}
		raw, given := r["triggerAtDay"].([]any)
		if !given {
			raw = []any{0.0}
		}
		for _, d := range raw {
			f, ok := d.(float64)
			if !ok || f != float64(int(f)) || f < 0 || f > 7 {
				return x.daily("its weekdays are not usable")
			}
			days = append(days, fmt.Sprint(int(f)%7))
		}
		dow := "*"
		if len(days) > 0 {
			dow = strings.Join(days, ",")
		}
		if w > 1 {
			x.warn("it fired every %d weeks; here it fires every week on those days", w)
		}
		return triggers.Config{Cron: fmt.Sprintf("%d %d * * %s", minute, hour, dow)}
	case "months":
		m, ok := whole(r, "monthsInterval", 1, 1, 12)
		dom, okD := whole(r, "triggerAtDayOfMonth", 1, 1, 31)
		if !ok || !okD {
			return x.daily("its monthly rule is not usable")
		}
		months := "*"
		if m > 1 {
			months = fmt.Sprintf("*/%d", m)
		}
		return triggers.Config{Cron: fmt.Sprintf("%d %d %d %s *", minute, hour, dom, months)}
	case "cronExpression":
		return x.cronExpr(str(r, "expression", ""))
	}
	return x.daily("its rule %s is not supported", quoted(field))
}

// cronExpr reads n8n's cron expression: five fields, or six with seconds
// first (our schedules have minutes as their finest unit).
func (x *nodeCtx) cronExpr(expr string) triggers.Config {
	if _, ok := expressionMode(expr); ok {
		return x.daily("its cron expression is computed")
	}
	fields := strings.Fields(expr)
	if len(fields) == 6 {
		if fields[0] != "0" && fields[0] != "*" {
			x.warn("its cron expression fires at second %s; here it fires at the start of the minute", fields[0])
		} else if fields[0] == "*" {
			x.warn("its cron expression fires every second; here it fires once a minute")
		}
		fields = fields[1:]
	}
	spec := strings.Join(fields, " ")
	if len(fields) != 5 && !(len(fields) == 1 && strings.HasPrefix(spec, "@")) || len(spec) > 200 || text.StripControls(spec) != spec ||
		strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return x.daily("its cron expression %s is not usable", snippet(expr))
	}
	if _, err := cronParser.Parse(spec); err != nil {
		return x.daily("its cron expression %s is not usable (%v)", snippet(expr), err)
	}
	return triggers.Config{Cron: spec}
}

// cronItem is one trigger time of the older Cron node.
func (x *nodeCtx) cronItem(it map[string]any) triggers.Config {
	minute, okM := whole(it, "minute", 0, 0, 59)
	hour, okH := whole(it, "hour", 14, 0, 23)
	if !okM || !okH {
		return x.daily("its time of day is not usable")
	}
	switch mode := str(it, "mode", "everyDay"); mode {
	case "everyMinute":
		return triggers.Config{Cron: "* * * * *"}
	case "everyHour":
		return triggers.Config{Cron: fmt.Sprintf("%d * * * *", minute)}
	case "everyDay":
		return triggers.Config{Cron: fmt.Sprintf("%d %d * * *", minute, hour)}
	case "everyWeek":
		wd, ok := whole(it, "weekday", 1, 0, 7)
		if !ok {
			return x.daily("its weekday is not usable")
		}
		return triggers.Config{Cron: fmt.Sprintf("%d %d * * %d", minute, hour, wd%7)}
	case "everyMonth":
		dom, ok := whole(it, "dayOfMonth", 1, 1, 31)
		if !ok {
			return x.daily("its day of the month is not usable")
		}
		return triggers.Config{Cron: fmt.Sprintf("%d %d %d * *", minute, hour, dom)}
	case "everyX":
		v, ok := whole(it, "value", 2, 1, 527040)
		if !ok {
			return x.daily("its interval is not usable")
		}
		unit := int64(3600)
		if str(it, "unit", "hours") == "minutes" {
			unit = 60
		}
		if secs := int64(v) * unit; secs <= 31622400 {
			return triggers.Config{IntervalSeconds: secs}
		}
		return x.daily("its interval is too long")
	case "custom":
		return x.cronExpr(str(it, "cronExpression", ""))
	default:
		return x.daily("its mode %s is not supported", quoted(mode))
	}
}
