#!/usr/bin/env bash
# dunst's context-menu program in the e2e tests: choose the notification's "Approve" action.
grep -i -m1 'approve'
