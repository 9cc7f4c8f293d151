"""The library in each agent's own skills folder (docs/agents.md).

- `table.py`: the agents, their user and project folders, whether they follow links, their budgets;
- `installer.py`: install (staged, then renamed into place), drift, sync, uninstall;
- `record.py`: what was installed where, from which digest (skillshelf's state folder);
- `cost.py`: what an installed set costs an agent's catalogue.

Skills are read only through a `SkillReader`. No MCP, no click.
"""
