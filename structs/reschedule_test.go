package structs

import (
	"strings"
	"testing"
	"time"
)

func TestReschedulePolicyValidate(t *testing.T) {
	ok := func() *ReschedulePolicy { return DefaultReschedulePolicy(JobTypeBatch) }
	tests := []struct {
		name   string
		policy *ReschedulePolicy
		want   string // substring of the error; "" for valid
	}{
		{"nil is the default", nil, ""},
		{"batch default", ok(), ""},
		{"service default", DefaultReschedulePolicy(JobTypeService), ""},
		{"unknown function", &ReschedulePolicy{DelayFunction: "linear"}, `delay_function "linear"`},
		{"negative attempts", &ReschedulePolicy{Attempts: -1, DelayFunction: DelayFunctionConstant}, "attempts -1"},
		{"negative delay", &ReschedulePolicy{Delay: -time.Second, DelayFunction: DelayFunctionConstant}, "must not be negative"},
		{"attempts without interval", &ReschedulePolicy{Attempts: 1, DelayFunction: DelayFunctionConstant}, "interval must be set"},
		{"unlimited needs no interval", &ReschedulePolicy{Unlimited: true, Attempts: 1, DelayFunction: DelayFunctionConstant}, ""},
		{"cap below delay", &ReschedulePolicy{Delay: time.Minute, MaxDelay: time.Second, DelayFunction: DelayFunctionFibonacci}, "max_delay 1s must not be below delay 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestReschedulePolicyCanonicalize(t *testing.T) {
	tests := []struct {
		name string
		in   ReschedulePolicy
		typ  string
		want ReschedulePolicy
	}{
		{"batch function", ReschedulePolicy{Attempts: 2}, JobTypeBatch, ReschedulePolicy{Attempts: 2, DelayFunction: DelayFunctionConstant}},
		{"service function and cap", ReschedulePolicy{Delay: time.Second}, JobTypeService,
			ReschedulePolicy{Delay: time.Second, DelayFunction: DelayFunctionExponential, MaxDelay: time.Hour}},
		{"cap at least the delay", ReschedulePolicy{Delay: 2 * time.Hour, DelayFunction: DelayFunctionFibonacci}, JobTypeBatch,
			ReschedulePolicy{Delay: 2 * time.Hour, DelayFunction: DelayFunctionFibonacci, MaxDelay: 2 * time.Hour}},
		{"full policy kept", *DefaultReschedulePolicy(JobTypeService), JobTypeBatch, *DefaultReschedulePolicy(JobTypeService)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in
			got.Canonicalize(tt.typ)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
