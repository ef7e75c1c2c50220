"""Version control: the one package that talks to git.

`gitrepo` wraps GitPython (a mirror of the repository, its commits, the
files of a commit); everything else receives plain data from it — SHAs,
file contents, lists of commits — so that the compiler side never touches
git (import-linter contract 1).
"""
