"""Terminal rendering for the commands: the live step table and the end-of-run summary."""
