package reload

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
)

// Commit is one row of DESCRIBE HISTORY, as reload reads it.
type Commit struct {
	Version    int64
	Time       time.Time
	User       string
	Operation  string
	EngineInfo string
	// Metrics are operationMetrics; every value is a string, as Delta writes them.
	Metrics map[string]string
}

// OutputRows returns numOutputRows, and false when the commit does not carry it.
func (c Commit) OutputRows() (int64, bool) {
	v, ok := c.Metrics["numOutputRows"]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// HistorySQL is the statement that reads the table's newest commits.
func HistorySQL(t databricks.TableName, limit int) string {
	return fmt.Sprintf("DESCRIBE HISTORY %s LIMIT %d", t.SQL(), limit)
}

// ParseHistory reads DESCRIBE HISTORY rows, looking columns up by name (the column set
// differs between runtimes). Values are read tolerantly: numbers as int64, float or string;
// times as time.Time or text; operationMetrics as a JSON object or a map.
func ParseHistory(res *databricks.Result) ([]Commit, error) {
	col := map[string]int{}
	for i, c := range res.Columns {
		col[strings.ToLower(c)] = i
	}
	get := func(row []any, name string) any {
		if i, ok := col[strings.ToLower(name)]; ok && i < len(row) {
			return row[i]
		}
		return nil
	}
	if _, ok := col["version"]; !ok {
		return nil, fmt.Errorf("DESCRIBE HISTORY returned no version column (columns %v)", res.Columns)
	}
	out := make([]Commit, 0, len(res.Rows))
	for _, row := range res.Rows {
		v, ok := asInt(get(row, "version"))
		if !ok {
			return nil, fmt.Errorf("DESCRIBE HISTORY: version %v is not a number", get(row, "version"))
		}
		c := Commit{Version: v, User: asString(get(row, "userName")), Operation: asString(get(row, "operation")),
			EngineInfo: asString(get(row, "engineInfo")), Time: asTime(get(row, "timestamp"))}
		c.Metrics = asMetrics(get(row, "operationMetrics"))
		out = append(out, c)
	}
	return out, nil
}

// asInt reads an integer that may arrive as int64, int32, float64, a decimal string or text.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
		if i := strings.IndexByte(s, '.'); i > 0 && strings.Trim(s[i+1:], "0") == "" {
			n, err := strconv.ParseInt(s[:i], 10, 64)
			return n, err == nil
		}
	case []byte:
		return asInt(string(x))
	}
	return 0, false
}

func asString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func asTime(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

func asMetrics(v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]string:
		return x
	case map[string]any:
		for k, v := range x {
			out[k] = asString(v)
		}
	case string, []byte:
		var m map[string]any
		if json.Unmarshal([]byte(asString(x)), &m) == nil {
			for k, v := range m {
				switch n := v.(type) {
				case float64:
					out[k] = strconv.FormatInt(int64(n), 10)
				default:
					out[k] = asString(v)
				}
			}
		}
	}
	return out
}

// inserted reads COPY INTO's (or MERGE's) result row: num_inserted_rows, else
// num_affected_rows. ok is false when the result carries neither.
func inserted(res *databricks.Result) (int64, bool) {
	if res == nil || len(res.Rows) == 0 {
		return 0, false
	}
	for _, name := range []string{"num_inserted_rows", "num_affected_rows"} {
		for i, c := range res.Columns {
			if strings.EqualFold(c, name) && i < len(res.Rows[0]) {
				return asInt(res.Rows[0][i])
			}
		}
	}
	return 0, false
}
