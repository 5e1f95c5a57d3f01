"""`bench view`: a local web app over a run store (`app.create_app`), its queries
(`queries`), transcripts (`transcript`), Jinja2 templates and static files."""
