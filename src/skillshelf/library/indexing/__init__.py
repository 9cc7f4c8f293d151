"""What every derived full-text index shares: the skill index (library/index/) and the session index
(artifacts/) both sit on this package, which imports neither of them."""
