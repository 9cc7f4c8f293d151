"""What a skill is: read from disk, parsed, scored and checked, with no index and no views."""
