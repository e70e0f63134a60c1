"""Language models by name (webapp.artifacts.model_names says what the names mean): resolving a name to files, the
tiny model, warm starts, merging and exporting what a run saved, and whether a tokenizer can call tools."""
