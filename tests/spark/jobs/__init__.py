"""Users' jobs the Spark tests run as a user would: a script, its own session, its own process."""
