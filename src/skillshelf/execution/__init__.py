"""Running skills in a separate, limited process (executeSkill). Never in the server process."""
