-- Neovim (0.8 or later): start the parallint language server for the files it reads.
-- Put this in your config (for example ~/.config/nvim/after/plugin/parallint.lua).
vim.api.nvim_create_autocmd("FileType", {
  pattern = { "python", "sh", "bash", "yaml", "json", "toml" },
  callback = function(args)
    vim.lsp.start({
      name = "parallint",
      cmd = { "parallint", "server", "--stdio" },
      root_dir = vim.fs.dirname(vim.fs.find({ ".git", "pyproject.toml" }, { upward = true, path = vim.api.nvim_buf_get_name(args.buf) })[1]),
    })
  end,
})
