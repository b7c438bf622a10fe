"""What several test modules share. No test module imports another test module (`make lint`
checks it): a helper two modules need lives here, a shared fixture in tests/fixtures/."""
