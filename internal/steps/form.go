package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Form is an input step's form: a flat JSON Schema object whose
// properties are strings, numbers, integers or booleans, optionally with
// an enum, and a list of required fields. It is deliberately small: a
// person answers it on a command line, so nesting is refused at load.
type Form struct {
	Fields   []FormField `json:"-"`
	Required []string    `json:"-"`
}

// FormField is one property of a form.
type FormField struct {
	Name        string
	Type        string // string, number, integer, boolean
	Enum        []any
	Description string
}

var formTypes = []string{"string", "number", "integer", "boolean"}

// FormError is a mistake in a form, at Path (keys from the form's root:
// properties, age, type), so a plan's error can point at the bad field.
type FormError struct {
	Path []string
	Msg  string
}

func (e *FormError) Error() string { return e.Msg }

// FormErrors are all the mistakes of a form, or of an answer to one, in
// the order written (an answer's: by field name).
type FormErrors []error

func (e FormErrors) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e FormErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// ParseForm reads a form from its JSON text, checking that it is flat.
// Properties keep the order they were written in. Its error is the
// FormErrors of every mistake, each a *FormError.
func ParseForm(raw []byte) (*Form, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc map[string]json.RawMessage
	if err := dec.Decode(&doc); err != nil {
		return nil, FormErrors{&FormError{Msg: fmt.Sprintf("form must be a mapping (a flat JSON Schema object): %v", err)}}
	}
	var errs FormErrors
	fail := func(path []string, format string, a ...any) {
		errs = append(errs, &FormError{Path: path, Msg: fmt.Sprintf(format, a...)})
	}
	f := &Form{}
	bad := map[string]bool{} // fields with a mistake of their own
	keys, _ := keysInOrder(raw)
	for _, key := range keys {
		v := doc[key]
		switch key {
		case "type":
			var t string
			if json.Unmarshal(v, &t) != nil || t != "object" {
				fail([]string{key}, "form: type must be object (the form is one object of fields)")
			}
		case "title", "description", "$schema", "additionalProperties":
		case "required":
			if err := json.Unmarshal(v, &f.Required); err != nil {
				fail([]string{key}, "form: required must be a list of field names")
			}
		case "properties":
			names, err := keysInOrder(v)
			var props map[string]json.RawMessage
			if err == nil {
				err = json.Unmarshal(v, &props)
			}
			if err != nil {
				fail([]string{key}, "form: properties must be a mapping of field names: %v", err)
				continue
			}
			for _, name := range names {
				field, err := parseField(name, props[name])
				if err != nil {
					errs = append(errs, err)
					bad[name] = true
					continue
				}
				f.Fields = append(f.Fields, field)
			}
		default:
			fail([]string{key}, "form: unknown key %q (a form has type, properties, required, title, description)", key)
		}
	}
	if _, ok := doc["properties"]; !ok {
		fail(nil, "form: properties must name at least one field")
	} else if len(f.Fields) == 0 && len(errs) == 0 {
		fail([]string{"properties"}, "form: properties must name at least one field")
	}
	for i, r := range f.Required {
		if f.field(r) == nil && !bad[r] {
			fail([]string{"required", strconv.Itoa(i)}, "form: required field %q is not among its properties", r)
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return f, nil
}

func parseField(name string, raw json.RawMessage) (FormField, error) {
	at := func(path ...string) []string { return append([]string{"properties", name}, path...) }
	fail := func(path []string, format string, a ...any) (FormField, error) {
		return FormField{}, &FormError{Path: path, Msg: fmt.Sprintf(format, a...)}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var p map[string]any
	if err := dec.Decode(&p); err != nil {
		return fail(at(), "form: field %q must be a mapping with a type", name)
	}
	fd := FormField{Name: name}
	keys, _ := keysInOrder(raw) // the first mistake as written, every time
	for _, key := range keys {
		v := p[key]
		switch key {
		case "type":
			t, _ := v.(string)
			if !slices.Contains(formTypes, t) {
				return fail(at(key), "form: field %q: type must be one of %s (a form is flat), got %v", name, strings.Join(formTypes, ", "), v)
			}
			fd.Type = t
		case "enum":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return fail(at(key), "form: field %q: enum must be a non-empty list", name)
			}
			fd.Enum = list
		case "description", "title":
			fd.Description, _ = v.(string)
		default:
			return fail(at(key), "form: field %q: unknown key %q (a field has type, enum, description, title)", name, key)
		}
	}
	if fd.Type == "" {
		return fail(at(), "form: field %q needs a type (%s)", name, strings.Join(formTypes, ", "))
	}
	for i, e := range fd.Enum {
		if _, err := fd.value(e); err != nil {
			return fail(at("enum", strconv.Itoa(i)), "form: field %q: enum value %v is not %s", name, e, article(fd.Type))
		}
	}
	return fd, nil
}

func (f *Form) field(name string) *FormField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// Check validates an answer against the form and returns it normalised
// (numbers as float64 or int64). Its error is the FormErrors of every
// field that does not fit, each naming the field.
func (f *Form) Check(answer map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(answer))
	names := make([]string, 0, len(answer))
	for k := range answer {
		names = append(names, k)
	}
	sort.Strings(names)
	var errs FormErrors
	for _, k := range names {
		fd := f.field(k)
		if fd == nil {
			errs = append(errs, fmt.Errorf("field %q is not in the form (it has %s)", k, f.names()))
			continue
		}
		v, err := fd.value(answer[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[k] = v
	}
	for _, r := range f.Required {
		if _, ok := answer[r]; !ok {
			errs = append(errs, fmt.Errorf("field %q is required", r))
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Parse reads a field's value from text (a --set flag, a terminal): the
// form's type says how.
func (f *Form) Parse(name, text string) (any, error) {
	fd := f.field(name)
	if fd == nil {
		return nil, fmt.Errorf("field %q is not in the form (it has %s)", name, f.names())
	}
	var v any = text
	switch fd.Type {
	case "boolean":
		b, ok := parseYesNo(text)
		if !ok {
			return nil, fmt.Errorf("field %q: want true or false (yes, no, y, n), got %q", name, text)
		}
		v = b
	case "number", "integer":
		n, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil {
			return nil, fmt.Errorf("field %q: want %s, got %q", name, article(fd.Type), text)
		}
		v = n
	}
	return fd.value(v)
}

func (f *Form) names() string {
	var s []string
	for _, fd := range f.Fields {
		s = append(s, fd.Name)
	}
	return strings.Join(s, ", ")
}

// value checks one value against the field's type and enum.
func (fd *FormField) value(v any) (any, error) {
	var out any
	switch fd.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("field %q: want a string, got %s", fd.Name, jsonKind(v))
		}
		out = s
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("field %q: want true or false, got %s", fd.Name, jsonKind(v))
		}
		out = b
	case "number", "integer":
		n, ok := number(v)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("field %q: want %s, got %s", fd.Name, article(fd.Type), jsonKind(v))
		}
		out = n
		if fd.Type == "integer" {
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return nil, fmt.Errorf("field %q: want an integer, got %v", fd.Name, n)
			}
			out = int64(n)
		}
	}
	if len(fd.Enum) > 0 {
		for _, e := range fd.Enum {
			if ev, err := fd.plain(e); err == nil && ev == out {
				return out, nil
			}
		}
		return nil, fmt.Errorf("field %q: %v is not one of %s", fd.Name, out, enumText(fd.Enum))
	}
	return out, nil
}

// plain is value without the enum check (for the enum's own values).
func (fd *FormField) plain(v any) (any, error) {
	c := *fd
	c.Enum = nil
	return c.value(v)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	if _, ok := number(v); ok {
		return fmt.Sprintf("the number %v", v)
	}
	return fmt.Sprintf("%T", v)
}

func enumText(list []any) string {
	var s []string
	for _, e := range list {
		b, _ := json.Marshal(e)
		s = append(s, string(b))
	}
	return strings.Join(s, ", ")
}

// keysInOrder lists a JSON object's keys in the order they appear.
func keysInOrder(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a mapping")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

func article(t string) string {
	if t == "integer" {
		return "an integer"
	}
	return "a " + t
}

// parseYesNo reads a person's boolean: what strconv.ParseBool takes, and
// yes, no, y and n in any case.
func parseYesNo(text string) (bool, bool) {
	t := strings.ToLower(strings.TrimSpace(text))
	switch t {
	case "yes", "y":
		return true, true
	case "no", "n":
		return false, true
	}
	b, err := strconv.ParseBool(t)
	return b, err == nil
}
